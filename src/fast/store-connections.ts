import type { OwnConnections } from "../store/redis/own-connections.js";
import { respIdSetReader } from "./resp/id-set-reader.js";
import { respWriter } from "./resp/writer.js";

/*
 * Apart from index.ts so that the commands that only write (ingest, follow) take the speed layer's
 * connections without loading its protocol paths, protobuf-es and connect-es with them: a fifth of
 * a second of every start.
 */

/** The speed layer's own connections for the redis engine: a RESP reader of id sets and a bulk writer. */
export const respConnections: OwnConnections = { idSetReader: respIdSetReader, bulkWriter: respWriter };

/** What a composition root hands the store (store/index.ts's ownConnections): the speed layer's connections, unless FAST_PATHS=off. */
export function storeConnections(config: { fastPaths: boolean }): OwnConnections | undefined {
  return config.fastPaths ? respConnections : undefined;
}
