/**
 * `relgraph/client`: the browser (and Node) client of relgraph. It has no Node built-ins;
 * test/client/bundle.test.ts bundles it for the browser to keep it that way.
 */
export {
  createRelgraphClient,
  eip1193Signer,
  RelgraphClientError,
  type Authorization,
  type AuthorizeOptions,
  type Eip1193Provider,
  type EncryptedData,
  type Game,
  type MessageSigner,
  type Page,
  type PageRequest,
  type Profile,
  type Protocol,
  type Relation,
  type RelationshipGraphEntry,
  type RelgraphClient,
  type RelgraphClientOptions,
  type Social,
  type UserInfo,
  type UserRef,
  type UserRefs,
} from "./relgraph-client.js";
export {
  DecryptionError,
  createPayloadKeyCache,
  decryptResult,
  fetchKeyNetwork,
  prepareDecryption,
  type DecryptResultOptions,
  type PayloadKeyCache,
  type PayloadKeyCacheOptions,
} from "./decrypt.js";
export { toChecksumAddress } from "../domain/identity.js";
export { createSiweMessage, STATEMENTS, type AuthorizedOperation, type SiweMessageOptions } from "./siwe-message.js";
export type { PublicKeyNetwork, KeyNodeInfo } from "../crypto/key-network.js";
