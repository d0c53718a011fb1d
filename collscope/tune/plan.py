"""What to measure next: the full grid or coordinate descent, in interleaved rounds.

Pure. A *stage* is a set of configurations measured together in ``rounds`` interleaved rounds
(A B C, B C A, C A B: the order rotates so drift of a shared cluster, and any first-in-round
effect, hits every configuration alike). The baseline is in every stage, so every ratio is
paired with a baseline measurement taken in the same round.

Coordinate descent (AutoCCL's one-variable-at-a-time search) starts at the baseline and, for
each variable in turn, measures the current best with that variable set to each of its values;
it moves to the candidate with the best score (geometric mean speed-up over the baseline across
sizes) when that beats the current point, and stops after a full pass without a move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from collscope.tune.space import Config, Space

STRATEGIES = ("auto", "grid", "descent")
# "auto" measures the full grid up to this many configurations, else descends.
GRID_LIMIT = 16


def rounds_order(configs: Sequence[Config], rounds: int) -> list[list[Config]]:
    """Per round, the configurations in the order they run: rotated by one each round."""
    count = len(configs)
    return [[configs[(r + i) % count] for i in range(count)] for r in range(rounds)]


def choose_strategy(strategy: str, space: Space) -> str:
    if strategy == "auto":
        return "grid" if space.grid_size <= GRID_LIMIT else "descent"
    return strategy


def descent_candidates(space: Space, current: Config, variable: str) -> list[Config]:
    """The baseline, the current point, and the current point with ``variable`` at each value."""
    configs = [space.baseline] if current == space.baseline else [space.baseline, current]
    for name, values in space.variables:
        if name == variable:
            for value in values:
                candidate = current.with_value(name, value)
                if candidate not in configs:
                    configs.append(candidate)
    return configs


@dataclass
class Descent:
    """Coordinate descent as a state machine: ``next_stage()``, measure, ``record(scores)``."""

    space: Space
    current: Config = field(init=False)
    moves: list[tuple[str, Config]] = field(default_factory=list)
    _index: int = 0            # next variable
    _since_move: int = 0       # variables tried since the last move

    def __post_init__(self) -> None:
        self.current = self.space.baseline

    @property
    def done(self) -> bool:
        return self._since_move >= len(self.space.variables)

    def next_stage(self) -> tuple[str, list[Config]] | None:
        """(variable, configurations to measure), or None when converged."""
        while not self.done:
            name = self.space.names[self._index]
            configs = descent_candidates(self.space, self.current, name)
            if len(configs) > len({self.space.baseline, self.current}):
                return name, configs
            self._advance(moved=False)     # nothing new to try for this variable
        return None

    def record(self, variable: str, scores: dict[Config, float]) -> None:
        """Scores of the stage just measured (failed configurations absent)."""
        best = max(scores, key=lambda c: scores[c], default=None)
        current_score = scores.get(self.current, 1.0 if self.current == self.space.baseline
                                   else float("-inf"))
        moved = best is not None and best != self.current and scores[best] > current_score
        if moved and best is not None:
            self.current = best
            self.moves.append((variable, best))
        self._advance(moved)

    def _advance(self, moved: bool) -> None:
        self._since_move = 1 if moved else self._since_move + 1
        self._index = (self._index + 1) % len(self.space.variables)
