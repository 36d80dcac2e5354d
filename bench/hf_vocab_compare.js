#!/usr/bin/env node
'use strict';
// Compares bert-vocab's vocabularies with those of Hugging Face tokenizers'
// WordPieceTrainer (the `tokenizers` npm package, Rust core) on the same
// text.  A one-off measurement, not a test: run it through
// bench/hf-vocab-compare.sh, which installs the package.
//
//   node hf_vocab_compare.js --bert-vocab BIN [--work DIR] [--sizes 3000,12000]
//        [--runs 4] [--cases cased,lowercase] FILE...
//
// The Node binding does not expose the trainer's options: Tokenizer.train()
// always uses the model's default WordPieceTrainer (vocab_size 30000,
// min_frequency 0, no special tokens, no alphabet limit, prefix "##").  So
// both sides learn 30000-token vocabularies with those settings (bert-vocab
// --vocab-size 30000 --min-frequency 0 --limit-alphabet 0 --special ''), and
// the vocabulary of size N is taken as the first N tokens in id order:
// merges do not depend on the target size, in either implementation.  The
// normalizer is BertNormalizer (clean text, Chinese characters, accents
// stripped when lower-casing, as BertWordPieceTokenizer does) and the
// pre-tokenizer BertPreTokenizer.
//
// HF walks its word counts in hash-map order, which varies from run to run:
// the ids of the "##c" symbols and hence tie-breaks change, so vocabularies
// are compared as sets, and HF is compared with itself over --runs runs to
// show how much of the difference is HF's own variation.  A further
// bert-vocab run with its own defaults (special tokens, --min-frequency 2,
// --limit-alphabet 1000) checks that those settings do not change the
// vocabulary at the sizes compared.
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

function hfTrain(files, lowercase, out) {
  const { Tokenizer, WordPiece, bertNormalizer, bertPreTokenizer } = require('tokenizers');
  const tok = new Tokenizer(WordPiece.empty());
  tok.setNormalizer(
    bertNormalizer({ cleanText: true, handleChineseChars: true, stripAccents: lowercase, lowercase }),
  );
  tok.setPreTokenizer(bertPreTokenizer());
  tok.train(files);
  const vocab = Object.entries(tok.getVocab(false)).sort((a, b) => a[1] - b[1]);
  fs.writeFileSync(out, vocab.map((e) => e[0] + '\n').join(''));
}

// HF's training prints progress lines on stdout: run it in a child whose
// stdout is dropped.
function hfVocab(files, lowercase, out) {
  const r = spawnSync(process.execPath, [__filename, '--hf-train', out, lowercase ? '1' : '0', ...files], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`HF training failed (${r.status})`);
  return readVocab(out);
}

function bertVocab(bin, files, lowercase, outDir, args) {
  const r = spawnSync(bin, ['-q', '--out', outDir, ...args, ...(lowercase ? ['--lowercase'] : []), ...files], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bert-vocab failed (${r.status})`);
  return readVocab(path.join(outDir, 'vocab.txt'));
}

function readVocab(file) {
  const s = fs.readFileSync(file, 'utf8');
  return s.endsWith('\n') ? s.slice(0, -1).split('\n') : s.split('\n');
}

// The tokens before the first merge: alphabet and "##c" symbols (no
// special tokens here); a merge makes a token longer than one character
// (two with "##").
function initialCount(v) {
  let n = 0;
  while (n < v.length && [...v[n].replace(/^##/, '')].length === 1) n++;
  return n;
}

function compare(a, b, n) {
  const sa = new Set(a.slice(0, n));
  const sb = new Set(b.slice(0, n));
  let common = 0;
  for (const t of sa) if (sb.has(t)) common++;
  const onlyA = [...sa].filter((t) => !sb.has(t));
  const onlyB = [...sb].filter((t) => !sa.has(t));
  return { n, common, onlyA, onlyB };
}

// Where the tokens that only one side has come in the other's 30000-token
// list: just past N (a near tie at the cut) or not at all (a real
// difference).
function ranks(tokens, other) {
  const pos = new Map(other.map((t, i) => [t, i]));
  const r = tokens.map((t) => (pos.has(t) ? pos.get(t) : -1));
  const absent = r.filter((x) => x < 0).length;
  const found = r.filter((x) => x >= 0).sort((x, y) => x - y);
  const med = found.length ? found[Math.floor(found.length / 2)] : null;
  return { absent, median: med };
}

function pct(x, n) {
  return ((100 * x) / n).toFixed(2) + '%';
}

function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === '--hf-train') {
    hfTrain(argv.slice(3), argv[2] === '1', argv[1]);
    return;
  }
  const opt = { work: '/tmp/hfvocab', sizes: '3000,12000', runs: '4', cases: 'cased,lowercase', files: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a.startsWith('--')) opt[a.slice(2).replace(/-(.)/g, (_, c) => c.toUpperCase())] = argv[++i];
    else opt.files.push(path.resolve(a));
  }
  if (!opt.bertVocab || !opt.files.length) {
    console.error('usage: hf_vocab_compare.js --bert-vocab BIN [--work DIR] [--sizes N,..] [--runs R] [--cases cased,lowercase] FILE...');
    process.exit(1);
  }
  const sizes = opt.sizes.split(',').map(Number);
  const runs = Math.max(1, Number(opt.runs));
  const bin = path.resolve(opt.bertVocab);
  fs.mkdirSync(opt.work, { recursive: true });
  const version = require('tokenizers/package.json').version;
  console.log(`# bert-vocab vs HF tokenizers ${version} WordPieceTrainer (Node binding)`);
  console.log(`# corpus: ${opt.files.join(' ')}`);
  for (const cs of opt.cases.split(',')) {
    const lower = cs === 'lowercase';
    const tag = path.join(opt.work, cs);
    const bv = bertVocab(bin, opt.files, lower, tag + '-bert', [
      '--vocab-size', '30000', '--min-frequency', '0', '--limit-alphabet', '0', '--special', '',
    ]);
    const hf = [];
    for (let r = 0; r < runs; r++) hf.push(hfVocab(opt.files, lower, `${tag}-hf${r}.txt`));
    const ib = initialCount(bv);
    const ih = initialCount(hf[0]);
    const init = compare(bv.slice(0, ib), hf[0].slice(0, ih), Math.max(ib, ih));
    const initSame = ib === ih && !init.onlyA.length && !init.onlyB.length;
    const alphabet = bv.filter((t) => [...t].length === 1).length;
    console.log(`\n## ${cs}: initial tokens (alphabet + ##c): bert-vocab ${ib}, HF ${ih}, ` +
      `${initSame ? 'the same set' : 'DIFFERENT sets'} (alphabet ${alphabet}); ` +
      `merges until: bert-vocab ${bv.length}, HF ${hf.map((v) => v.length).join('/')} tokens`);
    if (!initSame)
      console.log(`   initial only in bert-vocab: ${JSON.stringify(init.onlyA.slice(0, 20))}\n` +
        `   initial only in HF: ${JSON.stringify(init.onlyB.slice(0, 20))}`);
    for (const n of sizes) {
      if (n < Math.max(ib, ih)) {
        console.log(`  N=${n}: below the initial tokens, whose order in HF is random: not compared`);
        continue;
      }
      // bert-vocab against every HF run, and HF runs against each other
      const bh = hf.map((h) => compare(bv, h, n).common);
      const hh = [];
      for (let i = 0; i < runs; i++) for (let j = i + 1; j < runs; j++) hh.push(compare(hf[i], hf[j], n).common);
      const range = (a) => (a.length ? `${pct(Math.min(...a), n)}..${pct(Math.max(...a), n)}` : 'n/a');
      console.log(`  N=${n}: overlap bert-vocab/HF ${range(bh)} (${Math.min(...bh)}..${Math.max(...bh)} of ${n}); ` +
        `HF/HF ${range(hh)} over ${runs} runs`);
      // a systematic difference: bert-vocab tokens that no HF run has, or
      // tokens that every HF run has and bert-vocab lacks
      const any = new Set(hf.flatMap((h) => h.slice(0, n)));
      const every = hf.map((h) => new Set(h.slice(0, n)));
      const mine = new Set(bv.slice(0, n));
      const notHF = [...mine].filter((t) => !any.has(t));
      const missing = [...every[0]].filter((t) => every.every((e) => e.has(t)) && !mine.has(t));
      const rb = ranks(notHF, hf[0]);
      const rh = ranks(missing, bv);
      console.log(`    in no HF run: ${notHF.length} (HF run 1 rank: median ${rb.median}, ${rb.absent} never) ` +
        `${JSON.stringify(notHF.slice(0, 8))}`);
      console.log(`    in every HF run, not in bert-vocab: ${missing.length} (bert-vocab rank: median ${rh.median}, ` +
        `${rh.absent} never) ${JSON.stringify(missing.slice(0, 8))}`);
      // the settings bert-vocab is used with (data/train-default-models.sh)
      const dv = bertVocab(bin, opt.files, lower, `${tag}-bert-defaults-${n}`, ['--vocab-size', String(n)]);
      const sp = 5;
      const same = dv.length === n && dv.slice(sp).join('\n') === bv.slice(0, n - sp).join('\n');
      console.log(`    bert-vocab defaults (5 special tokens, --min-frequency 2, --limit-alphabet 1000): ` +
        (same ? 'the same tokens' : `${compare(dv.slice(sp), bv, n - sp).common} of ${n - sp} tokens the same` +
          (alphabet > 1000 ? ` (alphabet cut from ${alphabet} to 1000)` : '')));
    }
  }
}

main();
