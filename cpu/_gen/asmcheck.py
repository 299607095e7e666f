"""The loop x86bytes.py and neonwords.py share: over each file's lines
that hold an instruction's encoding beside the instruction, in GNU
syntax, in a comment, it compares the encoding with what the assembler
gives (or with -w writes that in)."""


def main(args, line, encode, stored, rewrite, show, label, unit):
    """Checks, or with -w first in args rewrites, the files in args.

    line matches a line of the kind, its group 4 the instruction;
    encode gives the encoding of each of a list of instructions, stored
    the one a matched line holds, rewrite the line for a match and an
    encoding, show an encoding as a mismatch reports it (after label for
    the stored one); unit names the lines in each file's summary.
    Returns the exit status: 1 on any mismatch."""
    write = args[:1] == ["-w"]
    files = args[1:] if write else args
    bad = 0
    for path in files:
        lines = open(path).read().split("\n")
        at = [(i, m) for i, l in enumerate(lines) if (m := line.match(l))]
        if not at:
            continue
        codes = encode([m.group(4) for _, m in at])
        for (i, m), code in zip(at, codes):
            have = stored(m)
            if write:
                lines[i] = rewrite(m, code)
            elif have != code:
                print(f"{path}:{i + 1}: {label}{show(have)}, but `{m.group(4)}` is {show(code)}")
                bad += 1
        if write:
            open(path, "w").write("\n".join(lines))
        else:
            print(f"{path}: {len(at)} {unit} checked")
    return 1 if bad else 0
