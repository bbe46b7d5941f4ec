import type { DescService } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import type { Caller } from "../domain/caller.js";
import { ADMITTED_CALLER } from "./interceptors.js";

/** A service implementation as relgraph's protocols call it: each method by its local name, with the request and its Caller. */
export type CallerMethods = Record<string, (request: never, caller: Caller) => Promise<unknown>>;

/**
 * `impl` as connect-es calls a service, (request, HandlerContext): each method is handed the Caller
 * its call was admitted as (ADMITTED_CALLER), as REST and the fast paths hand it over. The ApiKey
 * interceptor runs before any method, so a call without one never gets here.
 */
export function connectServiceImpl<S extends DescService>(service: S, impl: CallerMethods): ServiceImpl<S> {
  const methods: Record<string, (request: never, context: HandlerContext) => Promise<unknown>> = {};
  for (const { localName } of service.methods) {
    const method = impl[localName];
    if (method === undefined) continue;
    methods[localName] = (request, context) => method(request, callerOf(context));
  }
  return methods as unknown as ServiceImpl<S>;
}

function callerOf(context: HandlerContext): Caller {
  const caller = context.values.get(ADMITTED_CALLER);
  // The interceptors are the server's own wiring: a method reached unadmitted is relgraph's bug (50000).
  if (caller === null) throw new Error("a RelationService call reached its method without an admitted ApiKey");
  return caller;
}
