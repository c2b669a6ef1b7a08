#!/usr/bin/env node
// Every Hugging Face family the tracer is held to (issue 19: the README's eleven, falcon, olmo2, t5, deepseek_v3),
// each cut to two layers and small sizes, through `vramfit trace` and `vramfit batch --trace`: the table in
// docs/trace-families.md. The small configs are python/tests/configs/families-small/, which --write-configs makes
// from the published ones (python/tests/configs/families/) with smallConfig below; python/tests/test_family_answers.py
// runs the same configs and options.
//   node scripts/trace-families.mjs [--python PATH] [--write-configs] [--write-doc] [--only NAME,...]
// --write-doc puts the table into docs/trace-families.md (between its trace-families markers) instead of stdout.
// PATH defaults to $VRAMFIT_TORCH_CPU_PYTHON. Traces go through vramfit's trace cache (~/.cache/vramfit/traces):
// a second run answers from it.
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const published = join(root, "python", "tests", "configs", "families");
export const SMALL_DIR = join(root, "python", "tests", "configs", "families-small");

/**
 * The run every family is traced and answered with, shared with the pytest (runs.json): the sequence, the budget,
 * the families that train in bf16 (`bf16Only`), and those vramfit's own `--hf-config` model reads (`modelled`:
 * the README's list).
 */
const RUNS = JSON.parse(readFileSync(join(SMALL_DIR, "runs.json"), "utf8"));
export const { modelled: MODELLED, bf16Only: BF16_ONLY, images: IMAGES, seq: SEQ, budget: BUDGET } = RUNS;

/** Sizes a small config takes, field by field, wherever the published config has the field. */
const SMALL_FIELDS = {
  num_hidden_layers: 2, n_layer: 2, num_layers: 2, num_decoder_layers: 2,
  hidden_size: 64, n_embd: 64, d_model: 64,
  intermediate_size: 128, d_ff: 128, moe_intermediate_size: 32,
  num_attention_heads: 4, n_head: 4, num_heads: 4,
  head_dim: 16, d_kv: 16, query_pre_attn_scalar: 16,
  vocab_size: 512,
  // Mixture of experts: fewer experts, the same routing (DeepSeek-V3: one dense layer, then a routed one).
  num_local_experts: 4, n_routed_experts: 8, n_group: 2, topk_group: 1, num_experts_per_tok: 2, first_k_dense_replace: 1,
  // DeepSeek-V3's multi-head latent attention.
  kv_lora_rank: 32, q_lora_rank: 48, qk_nope_head_dim: 16, qk_rope_head_dim: 8, v_head_dim: 16,
  // ViT: a 32² image in 8² patches, ten classes.
  image_size: 32, patch_size: 8, num_labels: 10,
};

/**
 * A published config cut to two layers and small sizes: the same model_type and architecture (every flag kept:
 * GQA or MQA stays so, ties stay tied), only the sizes and counts changed. Grouped K/V heads keep their kind: as many
 * as the query heads, one, or two.
 */
export function smallConfig(config) {
  const small = { ...config };
  for (const [key, value] of Object.entries(SMALL_FIELDS)) if (key in small) small[key] = value;
  if ("num_key_value_heads" in config) {
    const heads = config.num_attention_heads;
    const kv = config.num_key_value_heads;
    small.num_key_value_heads = kv === heads ? small.num_attention_heads : kv === 1 ? 1 : 2;
  }
  // A padding token past the small vocabulary would be an embedding index out of range.
  if (typeof small.pad_token_id === "number" && small.pad_token_id >= small.vocab_size) small.pad_token_id = small.vocab_size - 1;
  return small;
}

/** The family names, in the table's order: the modelled ones first, then the others. */
export function families() {
  const names = readdirSync(published).filter((f) => f.endsWith(".json")).map((f) => f.slice(0, -5));
  return [...MODELLED.filter((n) => names.includes(n)), ...names.filter((n) => !MODELLED.includes(n)).sort()];
}

/** The options both `vramfit trace` and vramfit's own `--hf-config` model get for a family. */
export function runOptions(name) {
  return [...(IMAGES.includes(name) ? [] : ["--seq", String(SEQ)]), "--precision", BF16_ONLY.includes(name) ? "bf16" : "fp32", "--optimizer", "adamw", "--optimizer-impl", "foreach"];
}

function writeConfigs() {
  mkdirSync(SMALL_DIR, { recursive: true });
  for (const name of families()) {
    const text = readFileSync(join(published, `${name}.json`), "utf8");
    let json = JSON.stringify(smallConfig(JSON.parse(text)), null, 1);
    // Fields written as floats stay floats (transformers' configs check the type: 30.0, not 30).
    for (const [, key] of text.matchAll(/"(\w+)":\s*-?\d+\.\d+/g)) json = json.replace(new RegExp(`("${key}": -?\\d+)(?=[,\n])`), "$1.0");
    writeFileSync(join(SMALL_DIR, `${name}.json`), `${json}\n`);
  }
  console.error(`wrote ${families().length} configs to ${SMALL_DIR}`);
}

function vramfit(args, env = {}) {
  const run = spawnSync(process.execPath, [join(root, "bin", "vramfit.js"), ...args], { encoding: "utf8", env: { ...process.env, VRAMFIT_CUDA_LIBRARY: "/nonexistent/libcuda.so.1", ...env } });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr.trim() };
}

function table(python, only) {
  const scratch = mkdtempSync(join(tmpdir(), "vramfit-trace-families-"));
  const rows = [];
  for (const name of families().filter((n) => only === undefined || only.includes(n))) {
    const config = join(SMALL_DIR, `${name}.json`);
    const out = join(scratch, `${name}.trace.json`);
    const started = process.hrtime.bigint();
    const traced = vramfit(["trace", "--python", python, "--hf-config", config, ...runOptions(name), "--out", out]);
    const traceS = Number(process.hrtime.bigint() - started) / 1e9;
    if (traced.status !== 0) {
      rows.push(`| ${name} | trace failed: ${traced.stderr.split("\n").at(-1)} | | | | | | |`);
      continue;
    }
    const trace = JSON.parse(readFileSync(out, "utf8"));
    const kernels = [...new Set(trace.attention.map((a) => a.kernel))].join(", ") || "(no SDPA)";
    const answer = vramfit(["batch", "--trace", out, "--memory", BUDGET, "--json"]);
    const byTrace = answer.status === 0 ? JSON.parse(answer.stdout).batchSize : `exit ${answer.status}: ${answer.stderr}`;
    let own = "not modelled";
    let ownParams = "";
    if (MODELLED.includes(name)) {
      const analytic = vramfit(["batch", "--hf-config", config, ...runOptions(name), "--attention", "sdpa", "--memory", BUDGET, "--json"]);
      const planned = vramfit(["plan", "--hf-config", config, ...runOptions(name), "--attention", "sdpa", "--batch", "1", "--json"]);
      own = analytic.status === 0 ? JSON.parse(analytic.stdout).batchSize : `exit ${analytic.status}`;
      ownParams = planned.status === 0 ? JSON.parse(planned.stdout).parameterCount : "";
    }
    const cached = /cached/.test(traced.stderr) ? " (cached)" : "";
    rows.push(`| ${name} | ${trace.options.precision} | ${trace.workload.parameterCount} | ${ownParams} | ${trace.events.length} | ${trace.affine ? "yes" : `no: ${trace.affineReason}`} | ${kernels} | ${byTrace} | ${own} | ${traceS.toFixed(1)} s${cached} |`);
    console.error(rows.at(-1));
  }
  rmSync(scratch, { recursive: true, force: true });
  return [
    `| model_type | precision | parameters (traced) | parameters (vramfit's model) | events | affine | attention kernel | max batch, \`batch --trace\` | max batch, \`batch --hf-config\` | \`vramfit trace\` wall |`,
    `|---|---|---|---|---|---|---|---|---|---|`,
    ...rows,
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const flag = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
  if (args.includes("--write-configs")) writeConfigs();
  else {
    const python = flag("--python") ?? process.env.VRAMFIT_TORCH_CPU_PYTHON;
    if (!python) {
      console.error("trace-families: --python PATH or VRAMFIT_TORCH_CPU_PYTHON is needed (a Python with torch and transformers)");
      process.exit(2);
    }
    const only = flag("--only")?.split(",");
    const load = (await import("node:os")).loadavg()[0].toFixed(1);
    const text = `<!-- node scripts/trace-families.mjs, ${new Date().toISOString().slice(0, 10)}, load average ${load} at the start: seq ${SEQ}, AdamW (foreach), budget ${BUDGET} (\`--memory\`), compute capability 9.0 -->\n${table(python, only)}`;
    if (!args.includes("--write-doc")) console.log(text);
    else {
      const doc = join(root, "docs", "trace-families.md");
      const [begin, end] = ["<!-- trace-families:begin -->", "<!-- trace-families:end -->"];
      const old = readFileSync(doc, "utf8");
      writeFileSync(doc, `${old.slice(0, old.indexOf(begin) + begin.length)}\n${text}\n${old.slice(old.indexOf(end))}`);
      console.error(`wrote the table into ${doc}`);
    }
  }
}
