#!/usr/bin/env python3
"""Turns criterion's estimates into a markdown table per group: ns per decision (per newly denied
identifier in the groups of the ephemeral cache) and the ratio to the peer measured in the same group
(the benchmark whose name contains "peer"), if any."""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
groups = {}
for estimates in sorted(root.glob("**/new/estimates.json")):
    benchmark = json.loads((estimates.parent / "benchmark.json").read_text())
    mean = json.loads(estimates.read_text())["mean"]["point_estimate"]
    groups.setdefault(benchmark["group_id"], []).append((benchmark["full_id"][len(benchmark["group_id"]) + 1:], mean))

for group, rows in groups.items():
    peer = next((ns for name, ns in rows if "peer" in name), None)
    unit = "ns per newly denied identifier" if "denied" in group else "ns per decision"
    print(f"\n### {group}\n\n| benchmark | {unit} | × peer |\n|---|---:|---:|")
    for name, ns in rows:
        ratio = f"{ns / peer:.2f}" if peer else "-"
        print(f"| {name} | {ns:.0f} | {ratio} |")
