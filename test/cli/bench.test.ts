// scripts/bench.mjs in its quick mode: the report's shape, and the figures that could be wrong.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { presetNames } from "../../src/workload/presets.js";
import { root } from "./runCli.js";

interface Row {
  gpu: string;
  workload: string;
  truth: number;
  verified: boolean;
  seeded: { batchSize: number; probes: number; predicted: number };
  bisect1024: { batchSize: number; trials: number; correct: boolean; capped: boolean };
  lightning: { batchSize: number; trials: number; correct: boolean; trace: [number, boolean][] };
  seedErrorProbes: Record<string, number>;
}
interface Sweep {
  summary: { cases: number; allVerified: boolean; seeded: { probes: number; wrong: number }; lightning: { trials: number }; bisect1024: { trials: number } };
  rows: Row[];
}

type Strategy = "vramfit" | "vramfitModelSeed" | "vramfitExactSeed" | "bisect1024" | "lightning" | "accelerate" | "ultralytics";
interface JobRuns {
  rows: ({ gpu: string; workload: string; truth: number; exactSeed: number } & Record<Strategy, { batchSize: number; runs: number; correct: boolean }>)[];
  summary: Record<Strategy, { right: number; cases: number; medianRuns: number; maxRuns: number; totalRuns: number }>;
}

interface CommandRow {
  id: string;
  command: string;
  exitStatus: number;
  answer?: { batchSize: number; source: string };
  medianMs: number;
  nodeMedianMs: number;
  medianCpuMs?: number;
  nodeMedianCpuMs?: number;
  loadAverage: number;
  ratio: number;
  ms: number[];
  nodeMs: number[];
  goalText?: string;
  measured?: number;
  met?: boolean;
}

let report: {
  quick: boolean;
  commands: { runs: number; rows: CommandRow[] };
  api: {
    target: string;
    rows: { model: string; batchSize: number; tensors: number; planMs: number; planCpuMs: number; newPlanMs: number; newPlanCpuMs: number; checkedUs: number; checkedCpuUs: number }[];
    goals: { measuredMs: number; goalMs: number; met: boolean; measuredCpuMs: number }[];
  };
  native: Record<"memGetInfo" | "emptyProbe" | "resnet152Batch64Probe", { calls: number; medianUs: number; p90Us: number }>;
  search: Sweep;
  modelMiss: Sweep & { granularityBytes: number };
  jobRuns: JobRuns;
};
let stdout: string;

beforeAll(() => {
  const out = join(mkdtempSync(join(tmpdir(), "vramfit-bench-")), "report.json");
  // No driver variables from the caller's environment: the script points itself at the simulator.
  const run = spawnSync(process.execPath, [resolve(root, "scripts", "bench.mjs"), "--quick", "--json", "--out", out], {
    env: { PATH: process.env.PATH ?? "" },
    encoding: "utf8",
    timeout: 120_000,
  });
  expect(run.status, run.stderr).toBe(0);
  stdout = run.stdout;
  report = JSON.parse(readFileSync(out, "utf8"));
}, 120_000);

describe("scripts/bench.mjs --quick", () => {
  it("writes the same JSON to --out as to stdout with --json", () => {
    expect(JSON.parse(stdout)).toEqual(report);
    expect(report.quick).toBe(true);
  });

  it("times each command against node -e 0, run for run, and says whether its goal was met", () => {
    const c = report.commands;
    expect(c.rows.map((r) => r.id)).toEqual(["raw", "preset", "presetJson", "noAdvice"]);
    for (const row of c.rows) {
      expect(row.ms, row.id).toHaveLength(c.runs);
      expect(row.nodeMs, row.id).toHaveLength(c.runs);
      // The ratio is the median of the paired ratios: between the smallest and the largest pair's.
      const ratios = row.ms.map((ms, i) => ms / row.nodeMs[i]!);
      expect(row.ratio).toBeGreaterThanOrEqual(Math.min(...ratios) - 0.01);
      expect(row.ratio).toBeLessThanOrEqual(Math.max(...ratios) + 0.01);
    }
    if (process.platform === "linux") {
      // CPU time from /proc: starting Node alone takes some (not 0, so the reading works), and a
      // command that loads vramfit and answers takes more than Node doing nothing.
      for (const row of c.rows) expect(row.nodeMedianCpuMs, row.id).toBeGreaterThan(0);
      expect(c.rows.find((r) => r.id === "presetJson")!.medianCpuMs).toBeGreaterThan(c.rows.find((r) => r.id === "presetJson")!.nodeMedianCpuMs!);
    }
    for (const row of c.rows) expect(row.loadAverage, row.id).toBeGreaterThanOrEqual(0);
    const raw = c.rows.find((r) => r.id === "raw")!;
    expect(raw).toMatchObject({ goalText: "≤ 1.5× node -e 0", measured: raw.ratio, met: raw.ratio <= 1.5 });
    // 80 GiB less the default 5% reserve (4 GiB), 1e9 parameters × 16 bytes (AdamW, amp: three
    // segments, 16,003,366,912 B) and the 512 MiB job context leaves 60.6 GiB: 60 samples of 1 GiB.
    expect(raw.answer).toEqual({ batchSize: 60, source: "analytic" });
    // The preset answered analytically (no device), and agrees with the library's answer below
    // (the same setup: ResNet-152, fp32, momentum, on an H100-80GB).
    const preset = c.rows.find((r) => r.id === "presetJson")!;
    expect(preset.answer?.source).toBe("analytic");
    expect(preset.answer?.batchSize).toBe(report.api.rows.find((r) => r.model === "resnet152")?.batchSize);
    // llama-3.1-8b at 4096 tokens does not fit any of the four catalog GPUs: exit 1, advice or not.
    expect(c.rows.find((r) => r.id === "noAdvice")!.exitStatus).toBe(1);
  });

  it("answers every preset through the library, on a new plan and on a checked one", () => {
    expect(report.api.rows.map((r) => r.model)).toEqual(presetNames());
    for (const row of report.api.rows) {
      expect(row.tensors).toBeGreaterThan(0);
      expect(row.planMs).toBeGreaterThan(0);
      expect(row.newPlanMs).toBeGreaterThan(0);
      expect(row.checkedUs).toBeGreaterThan(0);
      // CPU time beside each wall time: every call does work.
      expect(row.planCpuMs, row.model).toBeGreaterThan(0);
      expect(row.newPlanCpuMs, row.model).toBeGreaterThan(0);
      expect(row.checkedCpuUs, row.model).toBeGreaterThan(0);
    }
    expect(report.api.goals[0]!.measuredCpuMs).toBe(Math.max(...report.api.rows.map((r) => r.newPlanCpuMs)));
    const worstNew = Math.max(...report.api.rows.map((r) => r.newPlanMs));
    expect(report.api.goals[0]).toMatchObject({ goalMs: 5, measuredMs: worstNew, met: worstNew <= 5 });
  });

  it("--help prints the sections and exits 0; an unknown option exits 2", () => {
    const help = spawnSync(process.execPath, [resolve(root, "scripts", "bench.mjs"), "--help"], { encoding: "utf8" });
    expect(help.status).toBe(0);
    for (const section of ["commands", "api", "native", "search", "modelMiss", "jobRuns"]) expect(help.stdout).toContain(`  ${section} `);
    const bad = spawnSync(process.execPath, [resolve(root, "scripts", "bench.mjs"), "--sections", "coldStart"], { encoding: "utf8" });
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('no section "coldStart"');
  });

  it("times native calls against the simulated driver", () => {
    for (const call of ["memGetInfo", "emptyProbe", "resnet152Batch64Probe"] as const) {
      expect(report.native[call].calls).toBe(200);
      expect(report.native[call].medianUs).toBeGreaterThan(0);
      expect(report.native[call].p90Us).toBeGreaterThanOrEqual(report.native[call].medianUs);
    }
  });

  for (const section of ["search", "modelMiss"] as const) {
    describe(section === "search" ? "probe counts, simulator at the model's 2 MiB granularity" : "probe counts, simulator at 4 MiB (a model miss)", () => {
      it("finds the true answer with the seeded search, checked by probes at b and b + 1", () => {
        const s = report[section];
        expect(s.rows).toHaveLength(6); // 3 workloads × 2 GPUs in quick mode
        expect(s.summary.allVerified).toBe(true);
        for (const row of s.rows) expect(row.seeded.batchSize, row.workload).toBe(row.truth);
        expect(s.summary.seeded.wrong).toBe(0);
      });

      it("makes no more probes than the bisection, and fewer than Lightning's search in all", () => {
        const s = report[section];
        // Per case Lightning can need one trial (its first guess happens to be the answer, batch 1),
        // where the seeded search also confirms that the next batch does not fit.
        for (const row of s.rows) expect(row.seeded.probes, `${row.gpu} ${row.workload}`).toBeLessThanOrEqual(row.bisect1024.trials);
        expect(s.summary.seeded.probes).toBeLessThan(s.summary.lightning.trials);
      });

      it("shows the [1, 1024] bisection capped above 1024 and wrong when nothing fits", () => {
        const rows = report[section].rows;
        const above = rows.filter((r) => r.truth > 1024);
        const none = rows.filter((r) => r.truth === 0);
        const within = rows.filter((r) => r.truth >= 1 && r.truth <= 1024);
        expect(above.length).toBeGreaterThan(0);
        expect(none.length).toBeGreaterThan(0);
        expect(within.length).toBeGreaterThan(0);
        for (const r of rows) expect(r.bisect1024.trials).toBe(10);
        for (const r of above) expect(r.bisect1024).toMatchObject({ batchSize: 1024, correct: false, capped: true });
        for (const r of none) expect(r.bisect1024).toMatchObject({ batchSize: 1, correct: false });
        for (const r of within) expect(r.bisect1024.correct, r.workload).toBe(true);
      });

      it("runs Lightning's binsearch: doubling from 2, then bisecting; 1 untested when 2 fails", () => {
        for (const r of report[section].rows) {
          const trace = r.lightning.trace;
          expect(trace).toHaveLength(r.lightning.trials);
          expect(trace[0]![0]).toBe(2);
          const firstFailure = trace.findIndex(([, fits]) => !fits);
          const doubling = firstFailure === -1 ? trace : trace.slice(0, firstFailure + 1);
          doubling.forEach(([batch], i) => expect(batch).toBe(2 ** (i + 1)));
          // fits(b) need not be monotone (the allocator's segments): the answer is right when it is a
          // boundary (it fits, the next does not), whenever batch 1 fits; its own trial fitted.
          if (r.truth === 0) expect(r.lightning).toMatchObject({ batchSize: 1, trials: 1, correct: false });
          else {
            expect(r.lightning.correct, `${r.gpu} ${r.workload}`).toBe(true);
            expect(trace.some(([batch, fits]) => batch === r.lightning.batchSize && fits) || r.lightning.batchSize === 1).toBe(true);
          }
        }
      });
    });
  }

  describe("runs of a real job per answer (scripts/bench-jobs.mjs)", () => {
    it("vramfit --exec finds the right batch every time: a median of ≤ 4 runs, ≤ 2 with an exact seed", () => {
      const { summary, rows } = report.jobRuns;
      expect(rows).toHaveLength(6); // 3 training jobs × 2 GPUs in quick mode
      for (const s of ["vramfit", "vramfitModelSeed", "vramfitExactSeed"] as const) expect(summary[s], s).toMatchObject({ right: 6, cases: 6 });
      expect(summary.vramfit.medianRuns).toBeLessThanOrEqual(4);
      expect(summary.vramfitExactSeed.medianRuns).toBeLessThanOrEqual(2);
      for (const r of rows) expect(r.exactSeed, `${r.gpu} ${r.workload}`).toBe(r.truth);
    });

    it("runs every strategy on the same jobs, each counted in runs of the job", () => {
      for (const r of report.jobRuns.rows) {
        for (const s of Object.keys(report.jobRuns.summary) as Strategy[]) {
          expect(r[s].runs, `${s} ${r.gpu} ${r.workload}`).toBeGreaterThanOrEqual(1);
          expect(r[s].correct).toBe(r[s].batchSize === r.truth);
        }
        expect(r.bisect1024.runs).toBe(10);
        expect(r.ultralytics.runs).toBe(r.gpu === "T4" ? 5 : 7); // 1–16 under 16 GiB, 1–64 above
      }
      expect(report.jobRuns.summary.vramfit.totalRuns).toBeLessThan(report.jobRuns.summary.lightning.totalRuns);
      expect(report.jobRuns.summary.ultralytics.right).toBe(0); // it aims at 60 % of the memory, by design
    });
  });

  it("shows the miss: coarser rounding lowers some answers and costs the seeded search probes", () => {
    const exact = new Map(report.search.rows.map((r) => [`${r.gpu}|${r.workload}`, r]));
    let lower = 0;
    for (const miss of report.modelMiss.rows) {
      const row = exact.get(`${miss.gpu}|${miss.workload}`)!;
      expect(miss.truth).toBeLessThanOrEqual(row.truth);
      if (miss.truth < row.truth) lower += 1;
    }
    expect(lower).toBeGreaterThan(0);
    expect(report.modelMiss.summary.seeded.probes).toBeGreaterThan(report.search.summary.seeded.probes);
    // The model is exact on a 2 MiB simulator (PyTorch's segments are whole 2 MiB pages): two probes,
    // the answer and the next batch, which the device refuses; one when not even batch 1 fits.
    for (const r of report.search.rows) expect(r.seeded.probes).toBe(r.truth === 0 ? 1 : 2);
  });
});
