"""The memory-systems track (``task=peers``): peer adapters and ChronoMem behind one
interface."""
