"""Checks deploy/grafana/trainyard-gpus.json: valid JSON shaped like a Grafana dashboard, the
panels of Grafana dashboard 12239 present, and every metric its queries use documented in
docs/metrics.md (so a renamed metric cannot silently blank a panel).
Usage: check_dashboard.py [REPO_ROOT]"""
import json
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
METRIC = re.compile(r"\b(DCGM_FI_[A-Z0-9_]+|trainyard_[a-z0-9_]+)\b")
PANELS_12239 = {"GPU Temperature", "GPU Avg. Temp", "GPU Power Usage", "GPU Power Total",
                "GPU SM Clocks", "GPU Utilization", "GPU Framebuffer Mem Used"}


def base_name(name):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.startswith("trainyard_") and name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def main():
    with open(os.path.join(ROOT, "deploy", "grafana", "trainyard-gpus.json")) as f:
        dash = json.load(f)
    with open(os.path.join(ROOT, "docs", "metrics.md")) as f:
        documented = set(METRIC.findall(f.read()))
    problems = []
    titles = {p["title"] for p in dash["panels"]}
    for missing in sorted(PANELS_12239 - titles):
        problems.append(f"panel '{missing}' of dashboard 12239 is missing")
    ids = [p["id"] for p in dash["panels"]]
    if len(ids) != len(set(ids)):
        problems.append("panel ids are not unique")
    used = set()
    for p in dash["panels"]:
        for key in ("x", "y", "w", "h"):
            if key not in p.get("gridPos", {}):
                problems.append(f"panel '{p['title']}' has no gridPos.{key}")
        for t in p.get("targets", []):
            names = {base_name(n) for n in METRIC.findall(t["expr"])}
            if not names:
                problems.append(f"panel '{p['title']}' query uses no known metric: {t['expr']}")
            for n in sorted(names - documented):
                problems.append(f"panel '{p['title']}' uses {n}, which docs/metrics.md does not list")
            used |= names
    for v in dash["templating"]["list"]:
        for n in sorted({base_name(n) for n in METRIC.findall(v["definition"])} - documented):
            problems.append(f"variable {v['name']} uses undocumented {n}")
    for p in problems:
        print("check_dashboard:", p)
    print(f"check_dashboard: {len(dash['panels'])} panels, {len(used)} metrics, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
