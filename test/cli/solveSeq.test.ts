// `vramfit batch --solve seq --batch B`: the longest context that fits, on the simulator and analytically; `check` at a --seq.
import { describe, expect, it } from "vitest";
import { runCli, runJson, simulatedGpus } from "./runCli.js";

const H100_3GIB_USED = "NVIDIA H100 80GB HBM3:85520809984:3221225472";
const RTX_4090 = "NVIDIA GeForce RTX 4090:25757220864";

interface SeqJson {
  seq: number;
  predictedSeq: number;
  batchSize: number;
  source: string;
  probes: number;
  budgetBytes: number;
  bytesAtBatch: number;
  limitedBy: "memory" | "context";
}

describe("batch --solve seq on the simulator: the analytic answer verified in at most 3 probes", () => {
  it("serving Qwen2.5-7B at batch 16 on an H100 with 3 GiB used", async () => {
    const args = ["batch", "--model", "qwen2.5-7b", "--mode", "infer", "--precision", "bf16", "--solve", "seq", "--batch", "16"];
    const run = await runJson<SeqJson>(args, simulatedGpus(H100_3GIB_USED));
    expect(run.status).toBe(0);
    expect(run.json.source).toBe("device");
    expect(run.json.limitedBy).toBe("memory");
    expect(run.json.seq).toBe(run.json.predictedSeq);
    expect(run.json.probes).toBeGreaterThanOrEqual(1);
    expect(run.json.probes).toBeLessThanOrEqual(3);
    expect(run.json.batchSize).toBe(16);
    expect(run.json.bytesAtBatch).toBeLessThanOrEqual(run.json.budgetBytes);
  });

  it("QLoRA training on a 24 GB card: Llama-3.1-8B, nf4, r = 16, full recomputation, batch 1", async () => {
    const args = ["batch", "--model", "llama-3.1-8b", "--lora-rank", "16", "--weights", "nf4", "--checkpointing", "--solve", "seq", "--batch", "1"];
    const run = await runJson<SeqJson>(args, simulatedGpus(RTX_4090));
    expect(run.status).toBe(0);
    expect(run.json.seq).toBe(run.json.predictedSeq);
    expect(run.json.limitedBy).toBe("memory");
    // Llama 3's 128,256-token vocabulary makes the loss the peak: the logits, Hugging Face's shifted
    // copy, their fp32 upcast and log_softmax's output, each s × 128,256 (docs/memory-model.md).
    expect(run.json.seq).toBeGreaterThan(4096);
    expect(run.json.probes).toBeLessThanOrEqual(3);
    // The answer is exact on the device too: one token more does not fit.
    const check = async (seq: number) =>
      (await runCli(["check", "--model", "llama-3.1-8b", "--lora-rank", "16", "--weights", "nf4", "--checkpointing", "--seq", String(seq), "--batch", "1"], simulatedGpus(RTX_4090))).status;
    expect(await check(run.json.seq)).toBe(0);
    expect(await check(run.json.seq + 1)).toBe(1);
  });
});

describe("batch --solve seq analytically", () => {
  it("is capped by the model's context length, and says so", async () => {
    const run = await runJson<SeqJson>(["batch", "--model", "gpt2", "--solve", "seq", "--batch", "1", "--gpu", "H100-80GB"]);
    expect(run.json).toMatchObject({ seq: 1024, limitedBy: "context", source: "analytic" });
    const text = await runCli(["batch", "--model", "gpt2", "--solve", "seq", "--batch", "1", "--gpu", "H100-80GB"]);
    expect(text.stdout).toMatch(/1024 \(context length\)/);
  });

  it("agrees with check at the answer and one token past it (KV cache included)", async () => {
    const base = ["--model", "llama-3.1-8b", "--mode", "infer", "--generate", "512", "--gpu", "RTX-4090"];
    const run = await runJson<SeqJson>(["batch", ...base, "--solve", "seq", "--batch", "4"]);
    expect(run.json.limitedBy).toBe("memory");
    const at = await runCli(["check", ...base, "--seq", String(run.json.seq), "--batch", "4"]);
    const past = await runCli(["check", ...base, "--seq", String(run.json.seq + 1), "--batch", "4"]);
    expect([at.status, past.status]).toEqual([0, 1]);
  });

  it("refuses what does not fit the question, in one line", async () => {
    for (const [args, pattern] of [
      [["batch", "--model", "llama-3-8b", "--solve", "seq", "--gpu", "H100-80GB"], /--batch: expected the batch the sequence must fit at/],
      [["batch", "--model", "llama-3-8b", "--solve", "seq", "--batch", "2", "--seq", "100", "--gpu", "H100-80GB"], /--seq: expected no --seq with --solve seq/],
      [["batch", "--model", "resnet50", "--solve", "seq", "--batch", "2", "--gpu", "H100-80GB"], /--solve: expected a text transformer/],
      [["batch", "--model", "llama-3-8b", "--solve", "tokens", "--gpu", "H100-80GB"], /--solve: expected batch or seq/],
      [["batch", "--model", "llama-3-8b", "--batch", "2", "--gpu", "H100-80GB"], /--batch: expected --solve seq with it/],
    ] as const) {
      const run = await runCli(args);
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(pattern);
      expect(run.stderr.trim().split("\n")).toHaveLength(1);
    }
  });
});
