/**
 * The SIWE statements that authorize the two encrypted operations. The server checks them
 * (auth/siwe.ts) and the browser client writes them (client/siwe-message.ts), so they live here,
 * free of any dependency.
 */

/** The statement a Profile authorization must carry. */
export const PROFILE_STATEMENT = "Access to User Profile.";
/** The statement a Relationship graph authorization must carry. */
export const RELATIONSHIP_GRAPH_STATEMENT = "Access to Relationship Graph.";
