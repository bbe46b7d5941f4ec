/**
 * Who a request is answered for: the ApiKey it was admitted with, by its public id (never the key
 * itself). What each key may hold of a shared resource, such as the recommendation snapshot pool, is
 * counted under it. Admission (auth/request-gate.ts) makes one per request; the protocols pass it on
 * to the service with the request message.
 */
export interface Caller {
  readonly keyId: string;
}
