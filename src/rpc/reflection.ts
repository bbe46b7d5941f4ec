import { create, createRegistry, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescFile, DescMessage, DescService, MessageInitShape, MessageShape, Registry } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { ConnectRouter } from "@connectrpc/connect";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/** Options of {@link registerReflection}. */
export interface ReflectionOptions {
  /**
   * Services that list_services advertises. Their files, and every file those import, become
   * resolvable by file name and by symbol.
   */
  services: DescService[];
}

/**
 * Registers gRPC server reflection, v1 and v1alpha, on the router, so that tools such as
 * `buf curl` and grpcurl can discover and call the given services without a schema file.
 * The reflection services advertise themselves too, as grpc-go does.
 */
export function registerReflection(router: ConnectRouter, options: ReflectionOptions): ConnectRouter {
  const catalog = createCatalog([...options.services, v1.ServerReflection, v1alpha.ServerReflection]);
  // The two versions are wire-identical apart from the package name, so v1alpha is served by
  // re-reading its messages as v1 messages and back.
  const toV1 = convert(v1alpha.ServerReflectionRequestSchema, v1.ServerReflectionRequestSchema);
  const toV1alpha = convert(v1.ServerReflectionResponseSchema, v1alpha.ServerReflectionResponseSchema);
  return router
    .service(v1.ServerReflection, {
      serverReflectionInfo: (requests) => answerStream(catalog, requests),
    })
    .service(v1alpha.ServerReflection, {
      serverReflectionInfo: (requests) => map(answerStream(catalog, map(requests, toV1)), toV1alpha),
    });
}

/** What reflection can describe: the advertised services and every file reachable from them. */
interface Catalog {
  serviceNames: string[];
  /** Files by their proto file name, e.g. "relgraph/v1/relation_service.proto". */
  files: Map<string, DescFile>;
  registry: Registry;
}

/** The oneof of a v1 response: one answer to one request. */
type Answer = MessageInitShape<typeof v1.ServerReflectionResponseSchema>["messageResponse"];

function createCatalog(services: DescService[]): Catalog {
  const files = new Map<string, DescFile>();
  const visit = (file: DescFile): void => {
    if (files.has(file.proto.name)) return;
    files.set(file.proto.name, file);
    file.dependencies.forEach(visit);
  };
  services.forEach((service) => visit(service.file));
  return {
    serviceNames: [...new Set(services.map((service) => service.typeName))],
    files,
    registry: createRegistry(...files.values()),
  };
}

/**
 * Answers each request of one reflection stream in order. Files already sent on this stream are
 * not sent again as dependencies; the client is expected to keep them, as the protocol allows.
 */
async function* answerStream(
  catalog: Catalog,
  requests: AsyncIterable<v1.ServerReflectionRequest>,
): AsyncIterable<v1.ServerReflectionResponse> {
  const sent = new Set<string>();
  for await (const request of requests) {
    yield create(v1.ServerReflectionResponseSchema, {
      validHost: request.host,
      originalRequest: request,
      messageResponse: answer(catalog, request.messageRequest, sent),
    });
  }
}

function answer(
  catalog: Catalog,
  request: v1.ServerReflectionRequest["messageRequest"],
  sent: Set<string>,
): Answer {
  switch (request.case) {
    case "listServices":
      return { case: "listServicesResponse", value: { service: catalog.serviceNames.map((name) => ({ name })) } };
    case "fileByFilename": {
      const file = catalog.files.get(request.value);
      return file ? filesWithDependencies(file, sent) : notFound(`file not found: ${request.value}`);
    }
    case "fileContainingSymbol": {
      const file = fileContainingSymbol(catalog.registry, withoutLeadingDot(request.value));
      return file ? filesWithDependencies(file, sent) : notFound(`symbol not found: ${request.value}`);
    }
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = request.value;
      const extendee = catalog.registry.getMessage(withoutLeadingDot(containingType));
      const extension = extendee && catalog.registry.getExtensionFor(extendee, extensionNumber);
      return extension
        ? filesWithDependencies(extension.file, sent)
        : notFound(`extension not found: ${containingType}(${extensionNumber})`);
    }
    case "allExtensionNumbersOfType": {
      const typeName = withoutLeadingDot(request.value);
      if (!catalog.registry.getMessage(typeName)) return notFound(`type not found: ${request.value}`);
      const numbers: number[] = [];
      for (const desc of catalog.registry) {
        if (desc.kind === "extension" && desc.extendee.typeName === typeName) numbers.push(desc.number);
      }
      return { case: "allExtensionNumbersResponse", value: { baseTypeName: typeName, extensionNumber: numbers } };
    }
    case undefined:
      return errorResponse(Code.InvalidArgument, "the request sets no message_request field");
  }
}

/**
 * Finds the file declaring a fully-qualified name: a message, enum, extension or service, or a
 * member that the registry does not index by itself (a method, a field, a oneof).
 */
function fileContainingSymbol(registry: Registry, name: string): DescFile | undefined {
  const desc = registry.get(name);
  if (desc) return desc.file;
  const dot = name.lastIndexOf(".");
  if (dot < 0) return undefined;
  const parent = registry.get(name.slice(0, dot));
  const member = name.slice(dot + 1);
  switch (parent?.kind) {
    case "service":
      return parent.methods.some((method) => method.name === member) ? parent.file : undefined;
    case "message":
      return [...parent.fields, ...parent.oneofs].some((m) => m.name === member) ? parent.file : undefined;
    default:
      return undefined;
  }
}

/**
 * The requested file, always, followed by those of its transitive imports that this stream has not
 * sent yet. Re-sending the requested file keeps a repeated question from getting an empty answer.
 * A file already sent had its own imports sent with it, so its subtree need not be walked again.
 */
function filesWithDependencies(file: DescFile, sent: Set<string>): Answer {
  const answer: DescFile[] = [file];
  const seen = new Set([file.proto.name]);
  for (let i = 0; i < answer.length; i++) {
    for (const dep of answer[i]?.dependencies ?? []) {
      if (seen.has(dep.proto.name)) continue;
      seen.add(dep.proto.name);
      if (!sent.has(dep.proto.name)) answer.push(dep);
    }
  }
  answer.forEach((f) => sent.add(f.proto.name));
  return {
    case: "fileDescriptorResponse",
    value: {
      fileDescriptorProto: answer.map((f) => toBinary(FileDescriptorProtoSchema, f.proto)),
    },
  };
}

function notFound(message: string): Answer {
  return errorResponse(Code.NotFound, message);
}

// Connect's Code values are the gRPC status code numbers that ErrorResponse carries.
function errorResponse(code: Code, message: string): Answer {
  return {
    case: "errorResponse",
    value: { errorCode: code, errorMessage: message },
  };
}

// Clients may send fully-qualified names in descriptor form (".pkg.Type") or plain ("pkg.Type").
function withoutLeadingDot(name: string): string {
  return name.startsWith(".") ? name.slice(1) : name;
}

function convert<From extends DescMessage, To extends DescMessage>(
  from: From,
  to: To,
): (message: MessageShape<From>) => MessageShape<To> {
  return (message) => fromBinary(to, toBinary(from, message));
}

async function* map<I, O>(input: AsyncIterable<I>, f: (item: I) => O): AsyncIterable<O> {
  for await (const item of input) yield f(item);
}
