/** The part of autocannon's API the bench uses (the package ships no types). */
declare module "autocannon" {
  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
  }
  /** One connection's client, as setupClient sees it. */
  interface Client {
    setRequests(requests: Request[]): void;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    requests?: Request[];
    headers?: Record<string, string>;
    timeout?: number;
    /** Called once per connection, as it is created. */
    setupClient?: (client: Client) => void;
  }
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    max: number;
  }
  interface Result {
    duration: number;
    errors: number;
    timeouts: number;
    non2xx: number;
    "2xx": number;
    latency: Histogram;
    requests: Histogram & { total: number; sent: number };
  }
  function autocannon(options: Options): Promise<Result>;
  export default autocannon;
}
