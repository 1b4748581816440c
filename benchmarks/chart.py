"""The benchmark's chart: minibroker relative to Tansu per row, in both of minibroker's modes (above 1 is
better for minibroker, whichever way the figure runs; `--fsync none` is the equal-durability pair the targets
judge, grouped fdatasync its durable mode), and broker CPU per message as partitions and producers grow."""

from __future__ import annotations

from typing import Any


def _advantage(ratio: float | None, higher_is_better: bool) -> float:
    """Normalised so that taller is better for minibroker: Tansu / minibroker for lower-is-better rows."""
    if not ratio:
        return 0.0
    return ratio if higher_is_better else 1 / ratio


def draw(rows: list[dict[str, Any]], scale: list[dict[str, Any]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    compared = [r for r in rows if r["ratio"] or r["durable_ratio"]]
    panels = 1 + bool(scale)
    fig, axes = plt.subplots(1, panels, figsize=(7 * panels, 0.8 + 0.36 * max(len(compared), 8)), squeeze=False)
    ax = axes[0][0]
    if compared:
        verdicts = {True: ("#2a9d8f", "--fsync none: target met"), False: ("#e76f51", "--fsync none: target missed"),
                    None: ("#9e9e9e", "--fsync none: no target")}
        durable = ("#8ab6d6", "grouped fdatasync (durable mode): no target")
        height = 0.4
        for offset, key in ((-height / 2, "ratio"), (height / 2, "durable_ratio")):
            advantage = [_advantage(r[key], r["higher_is_better"]) for r in compared]
            colors = [verdicts[r["passed"]][0] if key == "ratio" else durable[0] for r in compared]
            ys = [y + offset for y in range(len(compared))]
            ax.barh(ys, [a or float("nan") for a in advantage], height=height, color=colors)
            for y, value in zip(ys, advantage, strict=True):
                if value:
                    ax.text(value, y, f" {value:.2f}x", va="center", fontsize=7)
        ax.set_yticks(range(len(compared)), [r["row"] for r in compared], fontsize=8)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_xlabel("minibroker advantage over Tansu, same run and machine (x, log scale; >1 better)")
        ax.legend(handles=[Patch(color=c, label=label) for c, label in [*verdicts.values(), durable]], fontsize=7,
                  loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    else:
        ax.text(0.5, 0.5, "Tansu not installed: no comparison", ha="center", va="center")
        ax.set_axis_off()
    if scale:
        ax = axes[0][1]
        for broker in sorted({p["broker"] for p in scale}):
            for axis_name, fixed, marker in (("partitions", "producers", "o"), ("producers", "partitions", "s")):
                points = sorted((p[axis_name], p["broker_cpu_us_per_msg"]) for p in scale
                                if p["broker"] == broker and p[fixed] == 1 and p.get("broker_cpu_us_per_msg"))
                if points:
                    ax.plot([x for x, _ in points], [y for _, y in points], marker=marker,
                            label=f"{broker}: {axis_name}")
        ax.set_xscale("log")
        ax.set_yscale("log")  # from a fraction of a microsecond at 1 partition to ~100 at 1,000
        ax.set_xlabel("partitions or concurrent producers")
        ax.set_ylabel("broker CPU us per 100-byte message")
        ax.set_title("Scale")
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
