"""The chart the README shows: minibroker relative to Tansu per row (above 1 is better for minibroker,
whichever way the figure runs), and broker CPU per message as partitions and producers grow."""

from __future__ import annotations

from typing import Any


def draw(rows: list[dict[str, Any]], scale: list[dict[str, Any]], path: str, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    compared = [r for r in rows if r["ratio"]]
    panels = 1 + bool(scale)
    fig, axes = plt.subplots(1, panels, figsize=(7 * panels, 4.8), squeeze=False)
    ax = axes[0][0]
    if compared:
        names = [r["row"] for r in compared]
        # Normalised so that taller is better for minibroker: Tansu / minibroker for lower-is-better rows.
        advantage = [r["ratio"] if r["higher_is_better"] else 1 / r["ratio"] for r in compared]
        colors = [{True: "#2a9d8f", False: "#e76f51", None: "#9e9e9e"}[r["passed"]] for r in compared]
        ax.barh(names, advantage, color=colors)
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xscale("log")
        ax.invert_yaxis()
        for y, value in enumerate(advantage):
            ax.text(value, y, f" {value:.2f}x", va="center", fontsize=8)
        ax.set_xlabel("minibroker advantage over Tansu (x, log scale; >1 better)")
        ax.set_title("Same run, same machine (green: target met, red: missed, grey: no target)")
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
        ax.set_xlabel("partitions or concurrent producers")
        ax.set_ylabel("broker CPU us per 100-byte message")
        ax.set_title("Scale")
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
