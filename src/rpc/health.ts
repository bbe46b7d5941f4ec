import type { DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, type ConnectRouter, type HandlerContext } from "@connectrpc/connect";
import { Health, HealthCheckResponse_ServingStatus as Status } from "../../gen/grpc/health/v1/health_pb.js";

/** Options of registerHealth. */
export interface HealthOptions {
  /** The services whose health is asked by name; "" (the whole server) is always known. */
  services: DescService[];
  /** Resolves true when the server can answer (the store answers), within a second. */
  ready(): Promise<boolean>;
  /** How often Watch re-checks between its answers, in milliseconds (default 5000). */
  watchIntervalMs?: number;
}

/**
 * Registers grpc.health.v1.Health, so that Kubernetes gRPC probes and grpc_health_probe reach the
 * one port. Every named service is exactly as healthy as the server: all of them need the store.
 * It needs no ApiKey, like /readyz.
 */
export function registerHealth(router: ConnectRouter, options: HealthOptions): ConnectRouter {
  const known = new Set(["", ...options.services.map((service) => service.typeName)]);
  const intervalMs = options.watchIntervalMs ?? 5_000;
  const status = async () => ((await options.ready().catch(() => false)) ? Status.SERVING : Status.NOT_SERVING);

  return router.service(Health, {
    async check({ service }) {
      if (!known.has(service)) throw new ConnectError(`unknown service "${service}"`, Code.NotFound);
      return { status: await status() };
    },
    async list() {
      const current = await status();
      return { statuses: Object.fromEntries([...known].map((name) => [name, { status: current }])) };
    },
    async *watch({ service }, context: HandlerContext) {
      if (!known.has(service)) {
        yield { status: Status.SERVICE_UNKNOWN };
        await aborted(context.signal);
        return;
      }
      let last: Status | undefined;
      while (!context.signal.aborted) {
        const current = await status();
        if (current !== last) yield { status: current };
        last = current;
        await sleep(intervalMs, context.signal);
      }
    },
  });
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

function aborted(signal: AbortSignal): Promise<void> {
  return signal.aborted ? Promise.resolve() : new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}
