// Names that many plans give their tensors and phases alike, made once per process and shared by every plan that uses them.

/**
 * How many names a table keeps before it starts again. Each is a short string; the bound only
 * keeps a long-lived process that plans many models from holding every name it ever made.
 */
const NAMES_KEPT = 200_000;

/**
 * Names made from two parts (`forward` + `layers.57 mlp.up`, `layers.3.attn` + `weights`), each
 * made once. Advice builds a dozen timelines of one model and dozens of plans, each naming
 * thousands of phases and tensors alike: kept plans held a copy of every name each (GPT-3's
 * check: the phase names alone were 2.3 of the 21.5 MB its plans left live), which every garbage
 * collection copied until it was promoted. A name is a value: sharing one changes no output.
 * (What a name is made from, such as its split around layer numbers, may be kept the same way.)
 */
export class NameTable<First extends string | number, Second extends string | number, Made = string> {
  private readonly names = new Map<First, Map<Second, Made>>();
  private size = 0;

  constructor(private readonly make: (first: First, second: Second) => Made) {}

  /** What `make` makes of the two parts: made the first time, the same value after. */
  get(first: First, second: Second): Made {
    let bySecond = this.names.get(first);
    if (bySecond === undefined) this.names.set(first, (bySecond = new Map()));
    let name = bySecond.get(second);
    if (name === undefined) {
      if (this.size >= NAMES_KEPT) {
        this.names.clear();
        this.size = 0;
        this.names.set(first, bySecond);
        bySecond.clear();
      }
      bySecond.set(second, (name = this.make(first, second)));
      this.size += 1;
    }
    return name;
  }
}

/**
 * Names `<base>`, `<base>.1`, `<base>.2`, … as one list per base: a group's states, one per
 * parameter tensor, take the whole list in one lookup. A NameTable keyed by the number made two
 * map lookups per tensor and an inner map per base (ResNet-152's plan: ~4 ms of a fresh process).
 */
export class NumberedNames {
  private readonly lists = new Map<string, string[]>();
  private size = 0;

  /** The first `count` names of `base`'s list, made the first time (the list may hold more). */
  get(base: string, count: number): readonly string[] {
    let list = this.lists.get(base);
    if (list === undefined) {
      if (this.size >= NAMES_KEPT) {
        this.lists.clear();
        this.size = 0;
      }
      this.lists.set(base, (list = [base]));
      this.size += 1;
    }
    this.size += Math.max(0, count - list.length);
    for (let i = list.length; i < count; i++) list.push(`${base}.${i}`);
    return list;
  }
}
