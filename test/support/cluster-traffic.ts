import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Code, ConnectError, createClient as createRpcClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, Http2SessionManager } from "@connectrpc/connect-node";
import { createClient, type RedisClientType } from "redis";
import { RelationService } from "../../gen/relgraph/v1/relation_service_pb.js";
import type { FaultyCluster } from "./redis-cluster-faults.js";
import { startRelgraphProcess } from "./relgraph-process.js";

/*
 * The traffic a cluster fault must not break, each part as a real client of real processes:
 * readers asking `relgraph serve` on REST, gRPC and Connect for answers known in advance; a producer
 * adding change-feed entries for `relgraph follow`; a loader running `relgraph ingest` batch after
 * batch, each until it succeeds. Every answer is classified and timed, so a test can say how long
 * answers were not right after a fault and what they were meanwhile.
 *
 * The data is made of triples: users <p>a<i>, <p>b<i> and <p>c<i>, friends a–c and b–c, each with
 * its relationId as social username, so mutualFriend(a, b) is exactly [c].
 */

/** The records of triples `prefix`0 … `prefix`(count-1), in the ingestion format. */
export function tripleRecords(prefix: string, count: number, from = 0): object[] {
  const records: object[] = [];
  for (let i = from; i < from + count; i++) {
    const [a, b, c] = triple(prefix, i);
    for (const name of [a, b, c]) records.push(userRecord(name));
    records.push({ type: "friend", a, b: c, description: "Same guild" }, { type: "friend", a: b, b: c, description: "Same guild" });
  }
  return records;
}

/** The three relationIds of triple i. */
export function triple(prefix: string, i: number): [string, string, string] {
  return [`${prefix}a${i}`, `${prefix}b${i}`, `${prefix}c${i}`];
}

export function userRecord(name: string): object {
  const avatar = `https://avatars.example/${name}.png`;
  return { type: "user", relationId: name, name, avatar, addresses: [], social: { username: name, name, avatar }, game: null };
}

/** How one request ended. */
export type Outcome = "right" | "unavailable" | "wrong" | "failed";

/** One classified answer. */
export interface Answer {
  /** performance.now() when the answer arrived. */
  at: number;
  protocol: "rest" | "grpc" | "connect";
  outcome: Outcome;
  /** What came back, when it was not right. */
  detail?: string;
}

const API_KEY_HEADER = "apikey";

/** Asks serve for mutualFriend of the two users over `protocol` and says whether the answer is `expected`. */
export type Ask = (protocol: Answer["protocol"], users: [string, string]) => Promise<{ outcome: Outcome; names: string[] | null; detail?: string }>;

/** A client of one serve on the three protocols. */
export function askerOf(url: string, apiKey: string): { ask: Ask; close(): void } {
  const sessions = new Http2SessionManager(url);
  const grpc = createRpcClient(RelationService, createGrpcTransport({ baseUrl: url, sessionManager: sessions }));
  const connect = createRpcClient(RelationService, createConnectTransport({ baseUrl: url, httpVersion: "1.1" }));
  const headers = { [API_KEY_HEADER]: apiKey };
  const ask: Ask = async (protocol, users) => {
    try {
      if (protocol === "rest") {
        const response = await fetch(`${url}/api/v1/mutualFriend?socialUsername=${users.join(",")}&limit=100`, { headers, signal: AbortSignal.timeout(10_000) });
        const body = (await response.json()) as { code: string; data?: { relationId: { relationId: string } }[] };
        if (response.status === 503 && body.code === "50300") return { outcome: "unavailable", names: null };
        if (response.status !== 200 || body.code !== "0") return { outcome: "failed", names: null, detail: `${response.status} ${JSON.stringify(body)}` };
        return { outcome: "right", names: (body.data ?? []).map((user) => user.relationId.relationId) };
      }
      const client = protocol === "grpc" ? grpc : connect;
      const answer = await client.mutualFriend({ socialUsername: users, limit: 100 }, { headers, timeoutMs: 10_000 });
      return { outcome: "right", names: answer.data.map((user) => user.relationId?.relationId ?? "?") };
    } catch (error) {
      if (error instanceof ConnectError && error.code === Code.Unavailable) return { outcome: "unavailable", names: null };
      return { outcome: "failed", names: null, detail: String(error) };
    }
  };
  return { ask, close: () => sessions.abort() };
}

/** Readers asking for the triples of `prefix`, round robin, one loop per protocol, until stopped. */
export interface Readers {
  readonly answers: Answer[];
  /** Resolves once the loops have ended. */
  stop(): Promise<void>;
}

export function startReaders(ask: Ask, prefix: string, count: number): Readers {
  const answers: Answer[] = [];
  let running = true;
  const loop = async (protocol: Answer["protocol"], offset: number) => {
    for (let n = offset; running; n++) {
      const [a, b, c] = triple(prefix, n % count);
      const result = await ask(protocol, [a, b]);
      let outcome = result.outcome;
      let detail = result.detail;
      if (outcome === "right" && (result.names!.length !== 1 || result.names![0] !== c)) {
        outcome = "wrong";
        detail = `mutualFriend(${a}, ${b}) = ${JSON.stringify(result.names)}, expected ["${c}"]`;
      }
      answers.push({ at: performance.now(), protocol, outcome, ...(detail === undefined ? {} : { detail }) });
      // An unavailable store answers at once: do not spin on it.
      if (outcome !== "right") await sleep(20);
    }
  };
  const loops = (["rest", "grpc", "connect"] as const).map((protocol, i) => loop(protocol, i * 7));
  return {
    answers,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** What readers saw in a window: counts by outcome, and how long after `since` the last answer that was not right came. */
export function summarise(answers: readonly Answer[], since: number, until = performance.now()): {
  counts: Record<Outcome, number>;
  /** ms from `since` to the last answer that was not right; 0 when every answer was right. */
  notRightForMs: number;
  /** The first few answers that were wrong or failed. */
  bad: string[];
} {
  const counts: Record<Outcome, number> = { right: 0, unavailable: 0, wrong: 0, failed: 0 };
  let last = since;
  const bad: string[] = [];
  for (const answer of answers) {
    if (answer.at < since || answer.at > until) continue;
    counts[answer.outcome]++;
    if (answer.outcome !== "right") last = Math.max(last, answer.at);
    if ((answer.outcome === "wrong" || answer.outcome === "failed") && bad.length < 5) bad.push(`${answer.protocol}: ${answer.detail}`);
  }
  return { counts, notRightForMs: Math.round(last - since), bad };
}

/**
 * Waits until every protocol has answered right `streak` times in a row since `since` (each loop
 * walks every triple, so a streak as long as the triples covers all of them); fails after `timeoutMs`.
 */
export async function rightAgain(readers: Readers, since: number, streak: number, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const ok = (["rest", "grpc", "connect"] as const).every((protocol) => {
      let run = 0;
      for (let i = readers.answers.length - 1; i >= 0; i--) {
        const answer = readers.answers[i]!;
        if (answer.at < since) break;
        if (answer.protocol !== protocol) continue;
        if (answer.outcome !== "right") break;
        if (++run >= streak) return true;
      }
      return false;
    });
    if (ok) return;
    if (performance.now() > deadline) throw new Error(`answers were not right again within ${timeoutMs} ms: ${JSON.stringify(summarise(readers.answers, since))}`);
    await sleep(100);
  }
}

/** A direct connection to whichever master serves a key, found again after a fault. */
export class KeyedConnection {
  private client: RedisClientType | null = null;
  constructor(
    private readonly cluster: FaultyCluster,
    private readonly key: string,
  ) {}

  async send<T>(args: string[]): Promise<T> {
    try {
      if (this.client === null) {
        const address = await this.cluster.masterOfKey(this.key);
        const client = createClient({ url: `redis://${address}`, socket: { connectTimeout: 1_000, reconnectStrategy: false } }) as RedisClientType;
        client.on("error", () => {});
        await client.connect();
        this.client = client;
      }
      return (await this.client.sendCommand(args)) as T;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  close(): void {
    try {
      this.client?.destroy();
    } catch {
      // Already gone.
    }
    this.client = null;
  }
}

/** Feed entries added to a stream, one triple each; `acknowledged` holds those Redis took and replicated. */
export interface Producer {
  /** Indices of entries whose XADD succeeded and reached a replica (WAIT). */
  readonly acknowledged: number[];
  readonly added: number;
  /** Adds nothing until release(); resolves once no XADD is under way. */
  hold(): Promise<void>;
  release(): void;
  stop(): Promise<void>;
}

export function startProducer(cluster: FaultyCluster, stream: string, prefix: string, everyMs = 50): Producer {
  const connection = new KeyedConnection(cluster, stream);
  const acknowledged: number[] = [];
  let added = 0;
  let running = true;
  const gate = new Gate();
  const loop = (async () => {
    for (let k = 0; running; ) {
      await gate.pass();
      try {
        const records = tripleRecords(prefix, 1, k).map((record) => JSON.stringify(record)).join("\n");
        await connection.send(["XADD", stream, "*", "records", records]);
        added = k + 1;
        const replicas = await connection.send<number>(["WAIT", "1", "1000"]);
        if (replicas >= 1) acknowledged.push(k);
        k++;
      } catch {
        // The stream's master is gone: find its successor on the next try.
      }
      gate.done();
      await sleep(everyMs);
    }
  })();
  return {
    acknowledged,
    get added() {
      return added;
    },
    hold: () => gate.hold(),
    release: () => gate.release(),
    async stop() {
      running = false;
      gate.release();
      await loop;
      connection.close();
    },
  };
}

/** One `relgraph ingest` run of the loader. */
export interface LoadRun {
  batch: number;
  started: number;
  ended: number;
  code: number | null;
  output: string;
}

/** `relgraph ingest` of batch after batch of triples, each run again until it exits 0. */
export interface Loader {
  readonly runs: LoadRun[];
  /** Batches loaded (a run exited 0). */
  readonly completed: number;
  /** Starts no run until release(); resolves once no run is under way. */
  hold(): Promise<void>;
  release(): void;
  stop(): Promise<void>;
}

export function startLoader(env: Record<string, string>, dir: string, prefix: string, triplesPerBatch: number): Loader {
  const runs: LoadRun[] = [];
  let completed = 0;
  let running = true;
  const gate = new Gate();
  const loop = (async () => {
    for (let batch = 0; running; batch++) {
      const file = join(dir, `${prefix}${batch}.jsonl`);
      await writeFile(file, tripleRecords(`${prefix}${batch}x`, triplesPerBatch).map((record) => `${JSON.stringify(record)}\n`).join(""));
      // A batch begun is finished, whatever happens meanwhile: that is what is checked.
      for (;;) {
        await gate.pass();
        const started = performance.now();
        const process = startRelgraphProcess(["ingest", file], env);
        const code = await process.exited;
        gate.done();
        runs.push({ batch, started, ended: performance.now(), code, output: process.output.slice(-5).join("\n") });
        if (code === 0) break;
        await sleep(200);
      }
      completed = batch + 1;
    }
  })();
  return {
    runs,
    get completed() {
      return completed;
    },
    hold: () => gate.hold(),
    release: () => gate.release(),
    async stop() {
      running = false;
      gate.release();
      await loop;
    },
  };
}

/** Lets a loop's steps through until held; hold() resolves once the step under way is done. */
class Gate {
  private held: { promise: Promise<void>; open(): void } | null = null;
  private busy = false;
  private idle: (() => void)[] = [];

  async pass(): Promise<void> {
    while (this.held) await this.held.promise;
    this.busy = true;
  }

  done(): void {
    this.busy = false;
    for (const resolve of this.idle.splice(0)) resolve();
  }

  async hold(): Promise<void> {
    if (!this.held) {
      let open = () => {};
      const promise = new Promise<void>((resolve) => (open = resolve));
      this.held = { promise, open };
    }
    if (this.busy) await new Promise<void>((resolve) => this.idle.push(resolve));
  }

  release(): void {
    const held = this.held;
    this.held = null;
    held?.open();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
