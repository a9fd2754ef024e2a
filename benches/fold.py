"""Folds `perf script` call stacks into flame-graph lines (`comm;outer;...;inner count`),
as inferno-collapse-perf does, for machines where only python3 is at hand. Thread names
are kept with digits replaced by N, so the pool threads fold together."""
import re
import sys
from collections import Counter

counts = Counter()
comm, frames = None, []


def flush():
    if comm is not None:
        counts[";".join([comm] + frames[::-1])] += 1


for line in sys.stdin:
    if not line.strip():
        flush()
        comm, frames = None, []
    elif not line[0].isspace():
        comm = re.sub(r"\d+", "N", line.split()[0])
    else:
        parts = line.split(None, 1)
        sym = parts[1].rsplit(" (", 1)[0] if len(parts) > 1 else "[unknown]"
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym).replace(";", ":")
        frames.append(sym)
flush()
for stack, n in counts.most_common():
    print(stack, n)
