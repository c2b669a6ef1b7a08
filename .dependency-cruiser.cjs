// The layers of src/ (DESIGN.md, "Architecture"): a module imports its own floor and the floors below, never up, and no cycles.
// Checked by test/unit/layers.test.ts (and by hand: `npx depcruise src`).

/**
 * The floors, bottom first. Each is a path pattern under src/. The shared kernel (errors, units,
 * counts, durations, suggestions, cancellation, argument checks) is the ground floor every layer stands on.
 */
const FLOORS = [
  ["kernel", "(^|/)src/(errors|units|count|duration|suggest|checkpoint|checks)\\.ts$"],
  ["native", "(^|/)src/native/"],
  ["devices", "(^|/)src/devices/"],
  ["workload", "(^|/)src/workload/"],
  ["plan", "(^|/)src/plan/"],
  ["step", "(^|/)src/step/"],
  ["fit", "(^|/)src/fit/"],
  ["job", "(^|/)src/job/"],
  ["advice", "(^|/)src/advice/"],
  ["library", "(^|/)src/index\\.ts$"],
  ["cli", "(^|/)src/cli/"],
];

const anyOf = (patterns) => patterns.map((p) => `(${p})`).join("|");

/** One rule per floor: nothing on it imports a floor above it. */
const upward = FLOORS.slice(0, -1).map(([name, path], i) => ({
  name: `no-upward-from-${name}`,
  comment: `${name} imports only its own floor and those below (${FLOORS.slice(0, i).map(([n]) => n).join(", ") || "none"})`,
  severity: "error",
  from: { path },
  to: { path: anyOf(FLOORS.slice(i + 1).map(([, p]) => p)) },
}));

module.exports = {
  forbidden: [
    { name: "no-circular", comment: "no module reaches itself through its imports", severity: "error", from: { path: "(^|/)src/" }, to: { circular: true } },
    {
      name: "no-unplaced",
      comment: "every file of src/ is on a floor (add a new folder to FLOORS)",
      severity: "error",
      from: { path: "(^|/)src/", pathNot: anyOf(FLOORS.map(([, p]) => p)) },
      to: {},
    },
    ...upward,
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "^(node_modules|dist|build)/" },
    // Type-only imports count: a cycle of types is still a cycle to read through.
    tsPreCompilationDeps: true,
    // Sources import each other as `./x.js` (NodeNext): the TypeScript configuration resolves those to the `.ts` files.
    tsConfig: { fileName: "tsconfig.json" },
  },
};
