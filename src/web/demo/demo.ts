import {
  createRelgraphClient,
  eip1193Signer,
  type Eip1193Provider,
  type Protocol,
  type RelationshipGraphEntry,
  type RelgraphClient,
  type UserInfo,
  type UserRef,
  prepareDecryption,
} from "../../client/index.js";

/**
 * The demo dApp (GET /demo): connects the page's EIP-1193 wallet, signs the two SIWE
 * authorizations, and shows the user's Profile and Relationship graph decrypted in the browser,
 * then mutual friends and recommendations with their reasons. Everything goes through
 * relgraph/client, as a dApp of one's own would. The ApiKey and protocol can be set in the form or
 * the query string (?apiKey=…&protocol=connect); the server only in the form, and it starts as this
 * page's own origin.
 */

/** The ApiKey `relgraph serve` prints when it runs on the embedded store without API_KEYS. */
const DEV_API_KEY = "relgraph-dev-key";
const GRAPH_PAGE = 50;
const MAX_GRAPH_PAGES = 20;
const LIST_LIMIT = 10;

declare global {
  interface Window {
    ethereum?: Eip1193Provider;
  }
}

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

function init(): void {
  // The pairings' WebAssembly compiles while the user reads the page and connects the wallet; the
  // first decryption awaits it (and reports a failure) all the same.
  // Marks (here and in signIn) let anyone with the dev tools, and the bench, see where the wait goes.
  prepareDecryption().then(() => performance.mark("demo:wasm-ready"), () => undefined);
  const query = new URLSearchParams(location.search);
  // Never from the link: the wallet signs for this page's host, which SIWE_DOMAINS accepts, so a link
  // that chose the server would hand a valid authorization to whatever server it named.
  $<HTMLInputElement>("server").value = location.origin;
  $<HTMLInputElement>("apikey").value = query.get("apiKey") ?? DEV_API_KEY;
  $<HTMLSelectElement>("protocol").value = query.get("protocol") ?? "rest";
  $("settings").addEventListener("submit", (event) => {
    event.preventDefault();
    // From the moment of the click (the event's own time), not from when this handler got to run.
    performance.mark("demo:connect", { startTime: event.timeStamp });
    void signIn();
  });
}

async function signIn(): Promise<void> {
  setState("working");
  showError(null);
  for (const id of ["profile", "graph", "mutual", "recommendations"]) $(id).hidden = true;
  try {
    if (!window.ethereum) throw new Error("No wallet found: install an EIP-1193 wallet (window.ethereum) and reload.");
    const client = createRelgraphClient({
      baseUrl: $<HTMLInputElement>("server").value.trim(),
      apiKey: $<HTMLInputElement>("apikey").value.trim(),
      protocol: $<HTMLSelectElement>("protocol").value as Protocol,
    });
    status("Connecting the wallet…");
    const signer = await eip1193Signer(window.ethereum);
    const me: UserRef = { address: signer.address };
    status(`Signed in as ${signer.address}: sign the Profile authorization…`);
    const profileAuth = await client.authorize("profile", signer);
    performance.mark("demo:signed");
    status("Decrypting the profile through the key nodes…");
    const profile = await client.decryptedProfile(me, profileAuth);
    renderProfile(profile);
    performance.mark("demo:profile-shown");

    status("Sign the Relationship graph authorization…");
    const graphAuth = await client.authorize("relationshipGraph", signer);
    status("Decrypting the relationship graph…");
    const entries: RelationshipGraphEntry[] = [];
    let cursor = "";
    // One authorization serves every page of the chain.
    for (let page = 0; page < MAX_GRAPH_PAGES; page++) {
      const answer = await client.decryptedRelationshipGraph(me, graphAuth, { limit: GRAPH_PAGE, cursor });
      entries.push(...answer.data);
      cursor = answer.cursor;
      if (cursor === "") break;
    }
    renderGraph(entries);

    await renderMutual(client, me, entries);
    status("Loading recommendations…");
    const recommendations = await client.multiDimensionalRecommendation(me, { limit: LIST_LIMIT });
    renderRecommendations(recommendations.data);
    status(`Signed in as ${signer.address} over ${client.protocol}. Your profile and graph were decrypted in this browser.`);
    setState("done");
  } catch (error) {
    showError(error instanceof Error ? error.message : String(error));
    status("Failed.");
    setState("failed");
  }
}

function renderProfile(profile: { relationId: string; name: string; followingCount: number; followerCount: number }): void {
  $("profile-avatar").textContent = initials(profile.name || profile.relationId);
  $("profile-name").textContent = profile.name;
  $("profile-relationId").textContent = profile.relationId;
  $("profile-followingCount").textContent = String(profile.followingCount);
  $("profile-followerCount").textContent = String(profile.followerCount);
  $("profile").hidden = false;
}

function renderGraph(entries: RelationshipGraphEntry[]): void {
  const rows = entries.map((entry) =>
    row(
      { text: entry.relation.relationId, field: "relationId" },
      { text: entry.relation.name, field: "name" },
      { text: entry.address.join(" "), field: "address", className: "address" },
      { text: entry.social?.username ?? "", field: "social" },
      { text: entry.game?.name ?? "", field: "game" },
      { text: entry.description, field: "description" },
    ),
  );
  if (rows.length === 0) rows.push(row({ text: "No released relations yet." }));
  $("graph-rows").replaceChildren(...rows);
  $("graph").hidden = false;
}

/** Mutual friends with one friend at a time; the select picks which. */
async function renderMutual(client: RelgraphClient, me: UserRef, friends: RelationshipGraphEntry[]): Promise<void> {
  const select = $<HTMLSelectElement>("mutual-with");
  const candidates = friends.filter((friend) => refOf(friend) !== null);
  if (candidates.length === 0) return;
  select.replaceChildren(
    ...candidates.map((friend, i) => {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = `${friend.relation.name} (${friend.relation.relationId})`;
      return option;
    }),
  );
  const show = async () => {
    const friend = candidates[Number(select.value)]!;
    const answer = await client.mutualFriend(mergeRefs(me, refOf(friend)!), { limit: LIST_LIMIT });
    const items = answer.data.map((user: UserInfo) => {
      const li = document.createElement("li");
      li.dataset.relationId = user.relationId.relationId;
      li.textContent = `${user.relationId.name} (${user.relationId.relationId})`;
      return li;
    });
    if (items.length === 0) {
      const li = document.createElement("li");
      li.textContent = "No mutual friends.";
      items.push(li);
    }
    $("mutual-list").replaceChildren(...items);
  };
  select.onchange = () => void show().catch((error: unknown) => showError(String(error)));
  status("Loading mutual friends…");
  await show();
  $("mutual").hidden = false;
}

function renderRecommendations(users: UserInfo[]): void {
  const rows = users.map((user) =>
    row(
      { text: user.relationId.relationId, field: "relationId" },
      { text: user.relationId.name, field: "name" },
      { text: user.description ?? "", field: "description" },
    ),
  );
  if (rows.length === 0) rows.push(row({ text: "No recommendations." }));
  $("recommendation-rows").replaceChildren(...rows);
  $("recommendations").hidden = false;
}

/** A table row; values go in as text, never as HTML, whatever the store holds. */
function row(...cells: { text: string; field?: string; className?: string }[]): HTMLTableRowElement {
  const tr = document.createElement("tr");
  for (const cell of cells) {
    const td = document.createElement("td");
    td.textContent = cell.text;
    if (cell.field) td.dataset.field = cell.field;
    if (cell.className) td.className = cell.className;
    tr.append(td);
  }
  return tr;
}

function refOf(entry: RelationshipGraphEntry): UserRef | null {
  if (entry.address[0]) return { address: entry.address[0] };
  if (entry.social) return { socialUsername: entry.social.username };
  if (entry.game) return { gameId: entry.game.gameId };
  return null;
}

function mergeRefs(...refs: UserRef[]): { address: string[]; socialUsername: string[]; gameId: string[] } {
  const merged = { address: [] as string[], socialUsername: [] as string[], gameId: [] as string[] };
  for (const ref of refs) {
    if ("address" in ref) merged.address.push(ref.address);
    else if ("socialUsername" in ref) merged.socialUsername.push(ref.socialUsername);
    else merged.gameId.push(ref.gameId);
  }
  return merged;
}

function initials(name: string): string {
  return name
    .split(/\s+/)
    .map((word) => word[0] ?? "")
    .join("")
    .slice(0, 2)
    .toUpperCase();
}

function status(text: string): void {
  $("status").textContent = text;
}

function showError(text: string | null): void {
  $("error").textContent = text ?? "";
  $("error").hidden = text === null;
}

/** data-state on <body> ("idle", "working", "done", "failed") lets tests and scripts wait for the outcome. */
function setState(state: string): void {
  document.body.dataset.state = state;
}

init();
