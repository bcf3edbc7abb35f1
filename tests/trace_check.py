"""tests/trace_check.py: check a gpulua trace file's structure.

    python3 tests/trace_check.py TRACE.json [--streams N] [--overlap]
It must parse as Chrome trace event JSON; every complete event ("X") needs a
name, pid, tid, ts and dur; every stream track is named by a thread_name
event; with --streams, at least N tracks carry events; with --overlap, events
of two different tracks overlap in time (the streams really ran together).
Prints "1 passed, 0 failed" or the problem.
"""
import json
import sys

path = sys.argv[1]
want_streams = int(sys.argv[sys.argv.index("--streams") + 1]) if "--streams" in sys.argv else 1
want_overlap = "--overlap" in sys.argv
problems = []
doc = json.load(open(path))
events = doc["traceEvents"]
named = {(e["pid"], e["tid"]) for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
procs = {e["pid"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"}
spans = [e for e in events if e.get("ph") == "X"]
for e in spans:
    for k in ("name", "pid", "tid", "ts", "dur", "args"):
        if k not in e:
            problems.append(f"event without {k}: {e}")
    if (e["pid"], e["tid"]) not in named:
        problems.append(f"event on an unnamed track: {e}")
    if e["pid"] not in procs:
        problems.append(f"event of an unnamed process: {e}")
    if e["dur"] < 0:
        problems.append(f"negative duration: {e}")
tracks = {(e["pid"], e["tid"]) for e in spans}
if len(tracks) < want_streams:
    problems.append(f"{len(tracks)} tracks with events, wanted at least {want_streams}")
flows = [e for e in events if e.get("ph") in ("s", "f")]
starts = {e["id"] for e in flows if e["ph"] == "s"}
ends = {e["id"] for e in flows if e["ph"] == "f"}
if starts != ends:
    problems.append("flow events do not pair up")
if want_overlap:
    spans.sort(key=lambda e: e["ts"])
    overlap = False
    active = []
    for e in spans:
        active = [a for a in active if a["ts"] + a["dur"] > e["ts"]]
        if any(a["tid"] != e["tid"] or a["pid"] != e["pid"] for a in active):
            overlap = True
            break
        active.append(e)
    if not overlap:
        problems.append("no two tracks overlap in time")
print(f"{len(spans)} events on {len(tracks)} tracks, {len(starts)} flows")
if problems:
    for p in problems[:10]:
        print("problem:", p)
    print("0 passed, 1 failed")
    sys.exit(1)
print("1 passed, 0 failed")
