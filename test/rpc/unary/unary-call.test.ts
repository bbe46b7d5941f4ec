import { once } from "node:events";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ClientClosedRequest, readBody } from "../../../src/rpc/unary/unary-call.js";

describe("readBody", () => {
  it("resolves with the whole body and leaves no listener behind, so the stream's close costs nothing", async () => {
    // An HTTP/2 stream closes later, once the answer is sent: here it closes only when told to.
    const stream = new PassThrough({ autoDestroy: false });
    const body = readBody(stream, 100);
    stream.write(Buffer.from("ab"));
    stream.end(Buffer.from("c"));
    expect((await body).toString()).toBe("abc");
    expect(stream.listenerCount("close")).toBe(0);
    expect(stream.listenerCount("end")).toBe(0);
  });

  it("rejects when the stream closes before its end", async () => {
    const stream = new PassThrough();
    const body = readBody(stream, 100);
    stream.write(Buffer.from("ab"));
    stream.destroy();
    await expect(body).rejects.toBeInstanceOf(ClientClosedRequest);
  });

  it("rejects when the stream closed before the body was read (a reset while the ApiKey was checked), rather than wait for ever", async () => {
    const closed = new PassThrough();
    closed.write(Buffer.from("ab"));
    closed.destroy();
    await once(closed, "close");
    await expect(readBody(closed, 100)).rejects.toBeInstanceOf(ClientClosedRequest);
    // An HTTP/2 compatibility request stays open while the stream under it is gone.
    const stream = new PassThrough();
    stream.destroy();
    await once(stream, "close");
    await expect(readBody(Object.assign(new PassThrough(), { stream }), 100)).rejects.toBeInstanceOf(ClientClosedRequest);
  });

  it("rejects a body past the cap", async () => {
    const stream = new PassThrough();
    const body = readBody(stream, 2);
    stream.write(Buffer.from("abc"));
    await expect(body).rejects.toMatchObject({ code: expect.anything() });
  });
});
