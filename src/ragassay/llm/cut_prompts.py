"""Whether a server cut a prompt, told from the prompt tokens it says it read.

A server that keeps only the end of a prompt longer than its context (Ollama at its ``num_ctx``)
answers anyway, and its ``usage.prompt_tokens`` is the count it kept. Two signs give it away: it
read far less than was sent (under a share of the estimate, or of what this server usually reads
of a prompt), or it read exactly the same count for prompts whose sizes differ widely (no
tokenizer gives one count to texts a sixth apart: the count is a ceiling).

The usual share is learnt from this server's own whole prompts, and only from prompts that
cannot have been cut: a count reported for prompts of different sizes is a ceiling, not a
reading, so the prompts read at it never calibrate the rule that is meant to catch them.
"""

from __future__ import annotations

CUT_SHARE = 0.6  # a server that read less than this share of the estimated prompt cut it (a real
# tokenizer reads English at 0.9 to 1.3 of the 4-characters estimate)
CUT_CALIBRATION = 5  # whole prompts of a server before its own usual share is the measure
CUT_CALIBRATED = 0.6  # then, under this part of its usual share is a cut
CUT_CAPPED = 0.85  # prompts of other sizes read as one count, the larger under this part of the usual share: capped
CUT_SPREAD = 0.15  # sizes further apart than this share of the larger are "other sizes"
CUT_MIN_TOKENS = 200  # shorter prompts are left alone: a chat template's own tokens can outweigh the estimate's error
CUT_MIN_READ = 256  # a count below any real context (Ollama's smallest num_ctx in use is 512, its default 2,048)
# says the server's usage is not a count of what it read (a proxy, a stub): no rule decides


class ReadCounts:
    """What one server said it read of the prompts sent to it, and the rule that calls a prompt cut."""

    def __init__(self) -> None:
        self.sizes: dict[int, list[int]] = {}  # a reported count -> the estimated sizes of the prompts read as it
        self.ceilings: set[int] = set()  # counts reported for prompts of other sizes: where it cuts

    def usual(self) -> float | None:
        """The median share this server reads of a prompt's estimate, from prompts read at a count
        no prompt of another size was read at (never from a ceiling); None until there are enough."""
        ratios = sorted(
            read / sent
            for read, sizes in self.sizes.items()
            if read not in self.ceilings and not _apart(min(sizes), max(sizes))
            for sent in sizes
        )
        return ratios[len(ratios) // 2] if len(ratios) >= CUT_CALIBRATION else None

    def cut(self, read: int, sent: int) -> str | None:
        """Why the prompt of about ``sent`` tokens, read as ``read``, was cut; None when nothing says
        it was (it is then kept for the calibration, unless its count turns out to be a ceiling)."""
        if sent < CUT_MIN_TOKENS or read < CUT_MIN_READ:
            return None
        usual = self.usual()
        share = max(CUT_SHARE, CUT_CALIBRATED * usual) if usual is not None else CUT_SHARE
        short = CUT_CAPPED * (usual or 1.0)
        sizes = self.sizes.setdefault(read, [])
        # one count for prompts of other sizes, the larger read short of what this server reads of such a size:
        # the server stops at that count (two prompts near in size, or both read whole, may share a count by chance)
        other = [s for s in sizes if _apart(s, sent) and read < short * max(s, sent)]
        if other:
            self.ceilings.add(read)
        sizes.append(sent)
        if read < share * sent:  # a count a prompt was cut at is where this server stops: never a calibration
            self.ceilings.add(read)
            return f"the server read {read:,} of about {sent:,} prompt tokens"
        if read in self.ceilings and read < short * sent:
            near = max(other, key=lambda s: abs(s - sent)) if other else max(sizes[:-1] or [sent])
            low, high = sorted((near, sent))
            return (
                f"prompts of about {low:,} and {high:,} tokens were both read as {read:,}"
                if low != high
                else f"the server read {read:,} of about {sent:,} prompt tokens, the count it stops at"
            )
        return None


def _apart(a: int, b: int) -> bool:
    """Two prompt sizes far enough apart that one tokenizer would not read them as one count."""
    return abs(a - b) > CUT_SPREAD * max(a, b)
