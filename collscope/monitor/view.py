"""What a person sees: a live terminal view (rich) or one compact line per sample.

The text pieces (bars, sparklines, the compact line) are pure functions; ``LiveView`` only
arranges them in rich tables and redraws once per sample (no timer of its own, so an idle
terminal costs nothing between samples).
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from typing import Any

from collscope.monitor.summary import human_bytes
from collscope.records.sample import SampleRecord, split_metric

SPARK_CHARS = "▁▂▃▄▅▆▇█"
BAR_PARTIALS = " ▏▎▍▌▋▊▉"
MAX_INTERFACES = 8


def sparkline(values: list[float], top: float | None = None) -> str:
    """One character per value, scaled to ``top`` (default: the largest value)."""
    if not values:
        return ""
    ceiling = top if top is not None else max(values)
    if ceiling <= 0:
        return SPARK_CHARS[0] * len(values)
    last = len(SPARK_CHARS) - 1
    return "".join(SPARK_CHARS[min(last, max(0, round(v / ceiling * last)))] for v in values)


def bar(fraction: float, width: int = 20) -> str:
    """A horizontal bar ``width`` characters wide, in eighths of a character."""
    fraction = min(1.0, max(0.0, fraction))
    eighths = round(fraction * width * 8)
    full, partial = divmod(eighths, 8)
    text = "█" * full + (BAR_PARTIALS[partial] if partial else "")
    return text.ljust(width)


def rate_text(value: float | None) -> str:
    return "-" if value is None else human_bytes(value, binary=False) + "/s"


def group_by_labels(metrics: dict[str, float], family: str) -> dict[str, dict[str, float]]:
    """{'net.lo.rx_bytes_per_s': 1} -> {'lo': {'rx_bytes_per_s': 1}} for one family."""
    grouped: dict[str, dict[str, float]] = {}
    for name, value in metrics.items():
        parts = split_metric(name)
        if parts.family == family:
            key = ".".join(parts.labels.values())
            grouped.setdefault(key, {})[parts.metric] = value
    return grouped


def busiest(groups: dict[str, dict[str, float]], limit: int) -> list[str]:
    """Keys with any traffic, busiest first, at most ``limit``."""
    traffic = {key: values.get("rx_bytes_per_s", 0.0) + values.get("tx_bytes_per_s", 0.0)
               for key, values in groups.items()}
    active = [key for key, total in traffic.items() if total > 0]
    return sorted(active, key=lambda key: -traffic[key])[:limit]


def compact_line(sample: SampleRecord) -> str:
    """One line per sample for logs and pipes: CPU, memory, busy NICs/ports, every GPU."""
    m = sample.values
    clock = time.strftime("%H:%M:%S", time.localtime(sample.ts))
    parts = [f"{clock} {sample.host}"]
    if "cpu.percent" in m:
        parts.append(f"cpu {m['cpu.percent']:.1f}%")
    if "mem.used_bytes" in m and "mem.total_bytes" in m:
        parts.append(f"mem {human_bytes(m['mem.used_bytes'])}/{human_bytes(m['mem.total_bytes'])}")
    for family in ("net", "rdma"):
        groups = group_by_labels(m, family)
        for key in busiest(groups, MAX_INTERFACES):
            values = groups[key]
            parts.append(f"{key} rx {rate_text(values.get('rx_bytes_per_s'))} "
                         f"tx {rate_text(values.get('tx_bytes_per_s'))}")
    for index, values in sorted(group_by_labels(m, "gpu").items(), key=lambda kv: int(kv[0])):
        gpu = [f"gpu{index}"]
        if "util_percent" in values:
            gpu.append(f"{values['util_percent']:.0f}%")
        if "mem_used_bytes" in values:
            gpu.append(human_bytes(values["mem_used_bytes"]))
        if "power_w" in values:
            gpu.append(f"{values['power_w']:.0f}W")
        parts.append(" ".join(gpu))
    command = [f"{m['proc.cpu_seconds_per_s']:.2f} cores"] if "proc.cpu_seconds_per_s" in m \
        else []
    if "proc.rss_bytes" in m:
        command.append(human_bytes(m["proc.rss_bytes"]))
    if command:
        parts.append("cmd " + " ".join(command))
    return " | ".join(parts)


class LiveView:
    """Per-GPU bars and sparklines, per-NIC and per-RDMA-port bandwidth, host memory.

    Every sample goes into the history, but the screen is redrawn at most every
    ``min_redraw_s`` (nobody reads ten frames a second, and drawing is most of the view's CPU
    cost at short intervals); the last sample is always drawn at close.
    """

    def __init__(self, console: Any = None, history: int = 40, interval: float = 1.0,
                 min_redraw_s: float = 0.5) -> None:
        from rich.console import Console
        from rich.live import Live

        self.console = console or Console()
        self.interval = interval
        self.min_redraw_s = min_redraw_s
        self.history: dict[str, deque[float]] = defaultdict(lambda: deque(maxlen=history))
        self.live = Live(console=self.console, auto_refresh=False, transient=False)
        self._drawn_at = float("-inf")
        self._pending: SampleRecord | None = None

    def start(self) -> LiveView:
        self.live.start()
        return self

    def __call__(self, sample: SampleRecord) -> None:
        for name, value in sample.values.items():
            self.history[name].append(value)
        self._pending = sample
        if time.monotonic() - self._drawn_at >= self.min_redraw_s:
            self._draw()

    def _draw(self) -> None:
        if self._pending is not None:
            self.live.update(self.render(self._pending), refresh=True)
            self._pending = None
            self._drawn_at = time.monotonic()

    def close(self) -> None:
        if self.live.is_started:
            self._draw()
            self.live.stop()

    def _spark(self, name: str, top: float | None = None) -> str:
        return sparkline(list(self.history.get(name, ())), top)

    def render(self, sample: SampleRecord) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        m = sample.values
        blocks: list[Any] = [Text(
            f"collscope monitor  {sample.host}  {time.strftime('%H:%M:%S')}  "
            f"every {self.interval:g} s  (Ctrl-C to stop)", style="bold")]
        host = Table.grid(padding=(0, 1))
        if "cpu.percent" in m:
            host.add_row("cpu", bar(m["cpu.percent"] / 100), f"{m['cpu.percent']:5.1f} %",
                         self._spark("cpu.percent", 100.0))
        if "mem.used_bytes" in m and m.get("mem.total_bytes"):
            host.add_row("mem", bar(m["mem.used_bytes"] / m["mem.total_bytes"]),
                         f"{human_bytes(m['mem.used_bytes'])} / "
                         f"{human_bytes(m['mem.total_bytes'])}", "")
        command = [f"{m['proc.cpu_seconds_per_s']:.2f} cores"] \
            if "proc.cpu_seconds_per_s" in m else []
        if "proc.rss_bytes" in m:
            command.append(f"{human_bytes(m['proc.rss_bytes'])} RSS")
        if command:
            host.add_row("cmd", "", ", ".join(command), self._spark("proc.cpu_seconds_per_s"))
        blocks.append(host)
        gpus = group_by_labels(m, "gpu")
        if gpus:
            blocks.append(Text("GPUs", style="bold"))
            table = Table()
            for column in ("gpu", "util", "history", "memory", "power", "temp", "PCIe",
                           "xGMI/NVLink"):
                table.add_column(column)
            for index in sorted(gpus, key=int):
                v = gpus[index]
                util = v.get("util_percent")
                links = [v[k] for k in ("xgmi_read_bytes_per_s", "xgmi_write_bytes_per_s",
                                        "nvlink_rx_bytes_per_s", "nvlink_tx_bytes_per_s")
                         if k in v]
                pcie = [v[k] for k in ("pcie_rx_bytes_per_s", "pcie_tx_bytes_per_s",
                                       "pcie_bytes_per_s") if k in v]
                table.add_row(
                    index,
                    "-" if util is None else f"{bar(util / 100, 10)} {util:3.0f}%",
                    self._spark(f"gpu.{index}.util_percent", 100.0),
                    " / ".join(human_bytes(v[k]) if k in v else "-"
                               for k in ("mem_used_bytes", "mem_total_bytes")),
                    "-" if "power_w" not in v else f"{v['power_w']:.0f} W",
                    "-" if "temperature_c" not in v else f"{v['temperature_c']:.0f} C",
                    "-" if not pcie else rate_text(sum(pcie)),
                    "-" if not links else rate_text(sum(links)))
            blocks.append(table)
        for family, title in (("net", "network interfaces"), ("rdma", "RDMA ports")):
            groups = group_by_labels(m, family)
            if not groups:
                continue
            active = busiest(groups, MAX_INTERFACES)
            idle = sorted(key for key in groups if key not in active)
            keys = active + idle[:MAX_INTERFACES - len(active)]
            hidden = len(groups) - len(keys)
            blocks.append(Text(f"{title}" + (f" ({hidden} idle not shown)" if hidden else ""),
                               style="bold"))
            table = Table()
            for column in ("name", "rx", "tx", "history (rx+tx)"):
                table.add_column(column)
            for key in keys:
                prefix = f"{family}.{key}"
                rx = self.history.get(f"{prefix}.rx_bytes_per_s", deque())
                tx = self.history.get(f"{prefix}.tx_bytes_per_s", deque())
                table.add_row(key, rate_text(groups[key].get("rx_bytes_per_s")),
                              rate_text(groups[key].get("tx_bytes_per_s")),
                              sparkline([a + b for a, b in zip(rx, tx, strict=False)]))
            blocks.append(table)
        return Group(*blocks)
