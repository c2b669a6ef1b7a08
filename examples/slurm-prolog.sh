#!/usr/bin/env bash
# Refuses a Slurm job whose workload will not fit on the GPUs it was given, with the reason in the
# job log, before the job spends its allocation finding out. Run it as the first step of the job,
# once per node:
#
#   #SBATCH --nodes=4 --gres=gpu:8
#   srun --ntasks-per-node=1 examples/slurm-prolog.sh --model llama-2-7b --seq 4096 --batch 8 || exit 1
#   srun python train.py
#
# Arguments are `vramfit check`'s (a workload with --batch N, or --need SIZE); without any, the
# words of $VRAMFIT_CHECK are used. Every GPU the job sees (CUDA_VISIBLE_DEVICES) must fit.
# $VRAMFIT is the command to run (default `vramfit`; e.g. `npx --no-install vramfit`).
# Exit status: 0 fits; 1 does not fit, no usable GPU, or a bad requirement (exit 2 of vramfit).
#
# Not for slurm.conf's Prolog: a failing Prolog drains the node, and the node is not broken, the
# job is too big for it.
set -uo pipefail

read -r -a vramfit <<< "${VRAMFIT:-vramfit}"
if [[ $# -eq 0 ]]; then
  read -r -a requirement <<< "${VRAMFIT_CHECK:-}"
else
  requirement=("$@")
fi
where="job ${SLURM_JOB_ID:-?} on ${SLURMD_NODENAME:-$(hostname)}"
if [[ ${#requirement[@]} -eq 0 ]]; then
  echo "vramfit prolog: $where: refused: no requirement (give vramfit check's arguments, or set VRAMFIT_CHECK)" >&2
  exit 1
fi

# `check` prints a line per device (then, when it does not fit, advice) and exits 0 (fits),
# 1 (does not), 2 (bad input), 3 (no GPU).
verdict=$("${vramfit[@]}" check --device all "${requirement[@]}" 2>&1)
status=$?
case $status in
  0) outcome="ok" ;;
  1) outcome="refused" ;;
  2) outcome="refused: bad requirement" ;;
  *) outcome="refused: cannot check (exit $status)" ;;
esac
# The job log: one line with the verdict for the first GPU (or the error), the rest indented.
{
  echo "vramfit prolog: $where: $outcome: ${verdict%%$'\n'*}"
  [[ $verdict == *$'\n'* ]] && sed 's/^/  /' <<< "${verdict#*$'\n'}"
} >&2
[[ $status -eq 0 ]]
