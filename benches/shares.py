"""Where the samples of a folded profile (benches/fold.py's output, or inferno's) go: for
each PATTERN, the share of samples whose call stack has a frame containing it (a stack is
counted once per pattern, however many of its frames match).

    python3 benches/shares.py PROFILE.folded ZSTD tcp_sendmsg mi_ ...
"""
import sys

path, patterns = sys.argv[1], sys.argv[2:]
stacks = []
for line in open(path, encoding="utf-8"):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    stacks.append((stack, int(count)))
total = sum(n for _, n in stacks) or 1
print(f"{total} samples")
for p in patterns:
    share = sum(n for s, n in stacks if p in s) / total * 100
    print(f"{share:5.1f} %  {p}")
