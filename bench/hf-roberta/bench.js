#!/usr/bin/env node
'use strict';
// Throughput of Hugging Face `tokenizers` (Rust core, Node binding) with roberta-base's
// byte-level BPE, loaded from the Hub's own tokenizer.json (../shared/vocab/roberta-base),
// exactly as the corpus refs were made.  The roberta mode that
// ../shared/bench/hf-tokenizers/bench.js (WordPiece only) lacks; same protocol:
//   node bench.js TOKENIZER_JSON CORPUS.txt [PASSES]
// Each '\n'-separated line is one text (<s>/</s> included), encoded one at a time (await
// encode + getIds); one untimed warm-up pass, then PASSES timed passes; prints one JSON line
// with the median (MB = 1e6 bytes of UTF-8 input, file size).
const fs = require('fs');
const { Tokenizer } = require('tokenizers');

(async () => {
  const [tokjson, corpus, passesArg] = process.argv.slice(2);
  const passes = Number(passesArg === undefined ? 5 : passesArg);
  const tok = Tokenizer.fromFile(tokjson);
  let s = fs.readFileSync(corpus, 'utf8');
  if (s.endsWith('\n')) s = s.slice(0, -1);
  const lines = s.length ? s.split('\n') : [];
  const bytes = fs.statSync(corpus).size;
  async function onePass() {
    let ntok = 0;
    for (const l of lines) ntok += (await tok.encode(l)).getIds().length;
    return ntok;
  }
  let ntok = await onePass(); // warm-up
  const times = [];
  for (let p = 0; p < passes; p++) {
    const t0 = process.hrtime.bigint();
    ntok = await onePass();
    times.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  const t = [...times].sort((x, y) => x - y)[Math.floor(times.length / 2)];
  console.log(JSON.stringify({
    impl: 'hf-tokenizers-node', model: 'roberta-base', mode: 'loop', corpus, bytes,
    lines: lines.length, tokens: ntok, passes, median_s: +t.toFixed(4),
    MB_per_s: +(bytes / 1e6 / t).toFixed(3), tokens_per_s: Math.round(ntok / t),
    times_s: times.map((x) => +x.toFixed(4)),
  }));
})();
