import { parentPort } from "node:worker_threads";
import { parseAnswer, type ParseJob, type ParseReply } from "./answer-parser.js";

/** Worker-thread entry of the answer parser's pool (answer-parser.ts): parses and reduces, keeps nothing between jobs. */
parentPort?.on("message", (job: ParseJob) => {
  let reply: ParseReply;
  try {
    reply = { id: job.id, answer: parseAnswer(job.bytes, job.projection) };
  } catch (error) {
    reply = { id: job.id, error: error instanceof Error ? error.message : String(error) };
  }
  parentPort?.postMessage(reply);
});
