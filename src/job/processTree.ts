// Which processes belong to a job: its own process and everything under it, read from /proc.
import { readFileSync } from "node:fs";

interface ProcStat {
  ppid: number;
  pgrp: number;
  session: number;
}

/** /proc/PID/stat's parent, process group and session; undefined once the process is gone. */
function procStat(pid: number, proc: string): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`${proc}/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // "pid (comm) state ppid pgrp session …": comm may hold spaces and parentheses, so read after the last ")".
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const [ppid, pgrp, session] = [fields[1], fields[2], fields[3]].map(Number);
  if (ppid === undefined || pgrp === undefined || session === undefined || [ppid, pgrp, session].some(Number.isNaN)) return undefined;
  return { ppid, pgrp, session };
}

/**
 * A membership test for the job whose root process is `rootPid`, started as the leader of its
 * own session and process group: a process belongs when it is the root, is in the root's session
 * or group (also after its parent died and it was re-parented), or descends from the root. The
 * answers are cached: NVML names the same few processes at every sample.
 */
export function jobMembership(rootPid: number, proc = "/proc"): (pid: number) => boolean {
  const known = new Map<number, boolean>();
  const belongs = (pid: number): boolean => {
    if (pid === rootPid) return true;
    let current = pid;
    for (let depth = 0; depth < 64; depth += 1) {
      const stat = procStat(current, proc);
      if (stat === undefined) return false;
      if (stat.session === rootPid || stat.pgrp === rootPid || stat.ppid === rootPid) return true;
      if (stat.ppid <= 1) return false;
      current = stat.ppid;
    }
    return false;
  };
  return (pid) => {
    let answer = known.get(pid);
    if (answer === undefined) {
      answer = belongs(pid);
      known.set(pid, answer);
    }
    return answer;
  };
}
