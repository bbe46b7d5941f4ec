import { createClient } from "redis";
import type { ChangedPart, ChangeNotifier } from "../store.js";
import { withDeadline } from "./deadline.js";
import { CACHED_KEY_PREFIXES, changedPartOfKey } from "./keys.js";

/**
 * Reports which parts of the graph change, whatever process changes them, through Redis's
 * server-assisted client-side caching: one connection per node that holds data (the server, or each
 * master of a cluster) in RESP3 with CLIENT TRACKING ON BCAST over CACHED_KEY_PREFIXES, so Redis
 * pushes the name of every key written under them, by anyone, and keys.ts names the part each holds.
 *
 * A connection that is lost, stalls or is not yet set up could miss pushes: `watching` is false
 * until it is back, and "everything" is reported as it goes and again as it returns. A flushed
 * database (a push without keys) is "everything" too.
 */
export interface RedisTracking extends ChangeNotifier {
  close(): Promise<void>;
}

/** The name tracking connections give themselves (CLIENT LIST shows it). */
export const TRACKING_CLIENT_NAME = "relgraph-tracking";

/** How often each tracking connection proves it is alive and pushing; also the retry period. */
const HEARTBEAT_MS = 1_000;
/** A tracking connection that answers nothing for this long is treated as lost. */
const REPLY_TIMEOUT_MS = 1_000;
const CONNECT_TIMEOUT_MS = 2_000;

/**
 * Tracks the nodes `nodes()` names (redis:// URLs), following it as it changes (a cluster's masters
 * after a failover or resharding). Resolves once the first attempt to set each up has ended, so a
 * fresh store serves from its caches at once; a node that cannot be tracked only keeps the caches
 * bypassed.
 */
export async function startTracking(nodes: () => string[]): Promise<RedisTracking> {
  const listeners = new Set<(parts: readonly ChangedPart[]) => void>();
  const report = (parts: readonly ChangedPart[]) => {
    for (const listener of listeners) listener(parts);
  };
  const everything: readonly ChangedPart[] = [{ part: "everything" }];
  const trackers = new Map<string, NodeTracker>();
  let watching = false;
  const refresh = () => {
    watching = trackers.size > 0 && [...trackers.values()].every((tracker) => tracker.up);
  };
  const events: TrackerEvents = {
    changed: (key) => {
      const part = changedPartOfKey(key);
      if (part) report([part]);
    },
    flushed: () => report(everything),
    // Order matters on the way up: what was cached before the loss is dropped before anything is served.
    lost: () => {
      refresh();
      report(everything);
    },
    found: () => {
      report(everything);
      refresh();
    },
  };
  const follow = () => {
    const wanted = new Set(nodes());
    // A cluster client between two discoveries knows no masters: keep what is tracked until it does.
    if (wanted.size === 0 && trackers.size > 0) return;
    for (const [url, tracker] of trackers) {
      if (wanted.has(url)) continue;
      trackers.delete(url);
      tracker.close();
    }
    for (const url of wanted) if (!trackers.has(url)) trackers.set(url, new NodeTracker(url, events));
    refresh();
  };
  follow();
  await Promise.all([...trackers.values()].map((tracker) => tracker.started));
  const heartbeat = setInterval(() => {
    follow();
    for (const tracker of trackers.values()) void tracker.beat();
  }, HEARTBEAT_MS);
  heartbeat.unref();

  let closed: Promise<void> | null = null;
  return {
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    get watching() {
      return watching;
    },
    async caughtUp() {
      await Promise.all([...trackers.values()].map((tracker) => tracker.caughtUp()));
    },
    close() {
      closed ??= (async () => {
        clearInterval(heartbeat);
        listeners.clear();
        for (const tracker of trackers.values()) tracker.close();
        trackers.clear();
        watching = false;
      })();
      return closed;
    },
  };
}

interface TrackerEvents {
  /** Redis pushed a key written under a tracked prefix. */
  changed(key: string): void;
  /** The database was flushed. */
  flushed(): void;
  /** Pushes may be missed from now on. */
  lost(): void;
  /** Pushes arrive again; whatever happened meanwhile is unknown. */
  found(): void;
}

/** One node's tracking connection. */
class NodeTracker {
  /** True while every push reaches `events`. */
  up = false;
  /** Settles once the first attempt to set tracking up has ended, either way. */
  readonly started: Promise<void>;
  private readonly client;
  /** Bumped whenever the connection is lost, so that a set-up begun before it does not count. */
  private session = 0;
  private enabling: Promise<void> | null = null;
  private closing = false;

  constructor(
    url: string,
    private readonly events: TrackerEvents,
  ) {
    this.client = createClient({
      url,
      RESP: 3,
      emitInvalidate: true,
      // In RESP3, node-redis otherwise hands every push to its handler of Redis Enterprise's
      // maintenance notices, which first turns the push's parts into strings (for a debug line that
      // is off): work and garbage for each of a bulk load's hundreds of thousands of invalidations.
      maintNotifications: "disabled",
      name: TRACKING_CLIENT_NAME,
      disableOfflineQueue: true,
      socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 2_000) },
    });
    this.client.on("invalidate", (key: Buffer | string | null) => {
      // Before tracking is (again) up, "found" will report everything anyway.
      if (!this.up) return;
      if (key === null) this.events.flushed();
      else this.events.changed(key.toString());
    });
    // Every way a connection ends; node-redis reconnects by itself and emits "ready" again.
    for (const event of ["error", "end", "reconnecting"]) this.client.on(event, () => this.lose());
    this.client.on("ready", () => void this.enable());
    this.started = withDeadline(this.client.connect(), CONNECT_TIMEOUT_MS)
      .then(() => this.enable())
      .catch(() => {});
  }

  /** Proves the connection alive (or sets tracking up again once it is back). */
  async beat(): Promise<void> {
    if (this.closing || !this.client.isReady) return;
    if (!this.up) return this.enable();
    await this.caughtUp();
  }

  /**
   * A reply on the tracking connection comes after every push Redis queued on it before: for any
   * write completed before this call, its keys' pushes have been handled once this resolves.
   */
  async caughtUp(): Promise<void> {
    if (!this.up) return;
    try {
      await withDeadline(this.client.sendCommand(["PING"]), REPLY_TIMEOUT_MS);
    } catch {
      this.lose();
    }
  }

  close(): void {
    this.closing = true;
    this.lose();
    try {
      // Not close(): that waits for replies, and stops no reconnect loop a lost server left running.
      this.client.destroy();
    } catch {
      // Already closed.
    }
  }

  private lose(): void {
    this.session++;
    if (!this.up) return;
    this.up = false;
    this.events.lost();
  }

  /** Sets tracking up on the current connection; joins a set-up already under way. */
  private enable(): Promise<void> {
    if (this.closing) return Promise.resolve();
    this.enabling ??= this.setUp().finally(() => {
      this.enabling = null;
    });
    return this.enabling;
  }

  private async setUp(): Promise<void> {
    const session = this.session;
    try {
      // node-redis's handshake turned tracking on in the default mode, which cannot become BCAST.
      await withDeadline(this.client.sendCommand(["CLIENT", "TRACKING", "OFF"]), REPLY_TIMEOUT_MS);
      const prefixes = CACHED_KEY_PREFIXES.flatMap((prefix) => ["PREFIX", prefix]);
      await withDeadline(this.client.sendCommand(["CLIENT", "TRACKING", "ON", "BCAST", ...prefixes]), REPLY_TIMEOUT_MS);
      if (session !== this.session || this.closing) return;
      this.up = true;
      this.events.found();
    } catch {
      // Lost again, or Redis refused (no RESP3 or tracking before Redis 6): the caches stay bypassed.
    }
  }
}
