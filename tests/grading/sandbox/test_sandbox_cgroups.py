"""Whole-run caps: each sandbox run in its own control group (real cgroup v1 on these machines, real
bwrap, real kernels). The v2 layout cannot exist here (memory, pids and cpu are bound to v1
hierarchies), so its file handling is checked on a directory tree shaped like cgroupfs: a labelled fake."""
from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import nbformat
import pytest
from sandbox_helpers import FIXTURES, Recording, Runner, needs_bwrap, wait_gone

from grading.exercise import Catalogue, Limits
from grading.pipeline import grade_notebook
from grading.result import Status
from grading.sandbox import KernelRequest, cgroups
from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox
from grading.sandbox.cgroups import PREFIX, V1, V2, Counters, RunGroups, detect

CGROUPS = cgroups.probe()
needs_cgroups = pytest.mark.skipif(not CGROUPS.usable, reason=f"control groups unusable here: {CGROUPS.reason}")
CATALOGUE = FIXTURES / "catalogue"
MiB = 1 << 20

V1_CGROUP = "12:pids:/svc\n5:cpu,cpuacct:/svc\n4:memory:/box/svc\n1:name=systemd:/svc\n0::/svc\n"
V1_MOUNTS = textwrap.dedent("""\
    31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
    32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
    35 31 0:32 /box /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
    39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
    41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
""")


# ---- detection and the v2 layout (no host cgroups needed) ----------------------------------------

def test_v1_layout_is_found_under_the_services_own_groups():
    layout = detect(V1_CGROUP, V1_MOUNTS)
    assert isinstance(layout, V1)
    # the memory mount's root is /box, so /box/svc lives at <mount>/svc; cpu shares a hierarchy with cpuacct
    assert layout.bases == {"memory": Path("/sys/fs/cgroup/memory/svc"), "pids": Path("/sys/fs/cgroup/pids/svc"),
                            "cpu": Path("/sys/fs/cgroup/cpu,cpuacct/svc"),
                            "cpuacct": Path("/sys/fs/cgroup/cpu,cpuacct/svc")}  # the run's CPU usage (issue 24)
    assert Path("/sys/fs/cgroup/memory/svc/titangrade-tgsbx3") in layout.dirs(PREFIX + "tgsbx3")


def test_no_usable_layout_names_what_is_missing():
    mounts = "\n".join(line for line in V1_MOUNTS.splitlines() if "pids" not in line)  # and v2 offers nothing
    with pytest.raises(OSError, match=r"\['pids'\].*v1 hierarchies"):
        detect(V1_CGROUP, mounts)


def fake_v2_tree(root: Path, *, with_procs: bool) -> Path:
    """FAKE cgroupfs: plain files where the kernel would have its interface files (v2 cannot run here)."""
    svc = root / "system.slice" / "tg.service"
    svc.mkdir(parents=True)
    (svc / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    (svc / "cgroup.subtree_control").write_text("")
    (svc / "cgroup.procs").write_text("4242\n" if with_procs else "")
    return svc


def test_v2_layout_detected_prepared_and_limits_written(tmp_path):
    svc = fake_v2_tree(tmp_path, with_procs=False)
    mounts = f"41 31 0:38 / {tmp_path} rw,relatime - cgroup2 cgroup2 rw\n"
    layout = detect("0::/system.slice/tg.service\n", mounts)
    assert isinstance(layout, V2) and set(layout.bases.values()) == {svc}
    layout.prepare()
    assert (svc / "cgroup.subtree_control").read_text() == "+memory +pids +cpu"
    groups = RunGroups(layout=layout, cpus_per_run=1.5, cpu_weight=30)
    group = groups.create("tgsbx0", memory_mb=512, max_processes=64)
    run = svc / "titangrade-tgsbx0"
    assert (run / "memory.max").read_text() == str(512 * MiB)
    assert not (run / "memory.swap.max").exists()  # written only where the kernel has it (swap accounted)
    assert (run / "pids.max").read_text() == "64" and (run / "cpu.weight").read_text() == "30"
    assert (run / "cpu.max").read_text() == "150000 100000"
    (run / "memory.events").write_text("low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\noom_group_kill 0\n")
    (run / "pids.events").write_text("max 3\n")
    assert group.poll() == {"memory limit", "process limit"} and group.poll() == set()
    assert groups.leftovers() == ["tgsbx0"]
    # a v2 service group that already holds processes cannot enable controllers (EBUSY on a real host);
    # the service then moves into its own leaf, and later starts find the leaf and use its parent
    other = tmp_path / "other"
    other.mkdir()
    svc2 = fake_v2_tree(other, with_procs=True)
    leaf = detect("0::/system.slice/tg.service/titangrade-service\n",
                  f"41 31 0:38 / {other} rw - cgroup2 cgroup2 rw\n")
    assert set(leaf.bases.values()) == {svc2}


def test_a_failed_join_runs_nothing(tmp_path):
    group = cgroups.RunGroup(V1({c: tmp_path / "gone" / c for c in cgroups.CONTROLLERS}), PREFIX + "tgsbx0")
    marker = tmp_path / "ran"
    done = subprocess.run([*group.exec_prefix(), "touch", str(marker)], capture_output=True, text=True)
    assert done.returncode != 0 and "cgroup.procs" in done.stderr and not marker.exists()
    ok = cgroups.RunGroup(None, "")
    assert subprocess.run([*ok.exec_prefix(), "touch", str(marker)]).returncode == 0 and marker.exists()


def test_v1_cpu_accounting_in_its_own_hierarchy_is_found_and_read(tmp_path):
    # these machines mount cpu and cpuacct apart; a run's usage is read from its cpuacct group
    mounts = V1_MOUNTS.replace("cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct",
                               "cpu rw,relatime - cgroup cgroup rw,cpu")
    mounts += f"33 31 0:30 / {tmp_path}/acct rw,relatime - cgroup cgroup rw,cpuacct\n"
    layout = detect(V1_CGROUP.replace("5:cpu,cpuacct:/svc", "5:cpu:/svc\n6:cpuacct:/"), mounts)
    assert layout.bases["cpuacct"] == tmp_path / "acct" and layout.bases["cpu"] == Path("/sys/fs/cgroup/cpu/svc")
    files = layout.cpu_files(PREFIX + "tgsbx1")
    assert files is not None and files.usage == tmp_path / "acct" / "titangrade-tgsbx1" / "cpuacct.usage"
    assert tmp_path / "acct" / "titangrade-tgsbx1" in layout.dirs(PREFIX + "tgsbx1")  # the run joins it too
    assert "cpuacct" in layout.limit_files(memory_mb=256, max_processes=16, cpus=0)  # and it is made
    without = detect(V1_CGROUP.replace("5:cpu,cpuacct:/svc", "5:cpu:/svc"), mounts.replace("cpuacct", "net_cls"))
    assert without.cpu_files("x") is None  # no usage to read: the wall clock decides alone


def test_v2_cpu_usage_and_throttling_are_read_from_cpu_stat(tmp_path):
    svc = fake_v2_tree(tmp_path, with_procs=False)  # FAKE cgroupfs files, as above
    layout = detect("0::/system.slice/tg.service\n", f"41 31 0:38 / {tmp_path} rw,relatime - cgroup2 cgroup2 rw\n")
    group = cgroups.RunGroup(layout, PREFIX + "tgsbx0")
    run = svc / "titangrade-tgsbx0"
    run.mkdir()
    (run / "cpu.stat").write_text("usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\n"
                                  "nr_periods 10\nnr_throttled 9\nthrottled_usec 750000\n")
    (run / "cgroup.procs").write_text(f"{os.getpid()}\n")
    sample = group.cpu_sample()
    assert sample is not None and sample.used_s == 2.5 and sample.throttled_s == 0.75
    assert threading.get_native_id() in sample.waits  # this process's threads' run delay (schedstat)
    (run / "cpu.stat").unlink()
    assert group.cpu_sample() is None


def test_counters_tell_new_limits_apart_from_old_ones():
    before = Counters(oom_kills=1, pids_denied=2)
    assert Counters(oom_kills=1, pids_denied=2).limits_since(before) == set()
    assert Counters(oom_kills=2, pids_denied=2).limits_since(before) == {"memory limit"}
    assert Counters(oom_kills=1, pids_denied=5).limits_since(before) == {"process limit"}


def test_off_means_no_group_and_a_bad_policy_is_refused():
    groups = cgroups.run_groups("off")
    assert not groups.enabled and groups.create("tgsbx0", memory_mb=256, max_processes=16).exec_prefix() == []
    with pytest.raises(ValueError, match="auto, require, off"):
        cgroups.run_groups("sometimes")


# ---- real control groups (v1 here), real bwrap --------------------------------------------------

def group_of(pid: int) -> dict[str, str]:
    """controller -> cgroup path of a host process."""
    out = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for c in controllers.split(","):
            out[c] = path
    return out


@pytest.fixture(scope="module")
def sandbox():
    if not CGROUPS.usable:
        pytest.skip(CGROUPS.reason)
    return BwrapSandbox(BwrapConfig(cgroups="require"))


@needs_bwrap
@needs_cgroups
def test_kernel_is_born_in_its_runs_group_with_the_manifest_limits(sandbox):
    limits = Limits(memory_mb=768, max_processes=40)
    session = sandbox.start(KernelRequest(limits=limits))
    try:
        dirs = sandbox.groups.layout.dirs(session.group.name)
        groups = group_of(session.pid)  # the outer bwrap: it joined before it exec'd
        for controller in ("memory", "pids", "cpu"):
            assert groups[controller].endswith(f"/{PREFIX}{session.user.pw_name}"), groups
        memory = next(d for d in dirs if (d / "memory.limit_in_bytes").exists())
        pids = next(d for d in dirs if (d / "pids.max").exists())
        assert int((memory / "memory.limit_in_bytes").read_text()) == 768 * MiB
        assert (pids / "pids.max").read_text().strip() == "40"
        cpu = next(d for d in dirs if (d / "cpu.shares").exists())
        assert (cpu / "cpu.shares").read_text().strip() == "102"  # weight 10 of 100 = 102 of v1's 1024
        members = {int(p) for p in (pids / "cgroup.procs").read_text().split()}
        assert session.pid in members and len(members) >= 3  # bwrap, its pid-1 and the kernel at least
    finally:
        session.close()
    assert not any(d.exists() for d in dirs), "the run's group outlived it"


@needs_bwrap
@needs_cgroups
def test_a_runs_cpu_is_counted_in_its_group_with_every_process(sandbox):
    if sandbox.groups.layout.cpu_files("x") is None:
        pytest.skip("no cpuacct hierarchy here: a run's CPU usage cannot be read")
    session = sandbox.start(KernelRequest(limits=Limits(memory_mb=1024, cpu_time_s=30)))
    run = Runner(session)
    try:
        before = session.group.cpu_sample()
        spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
        child = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {spin!r}], check=True)"
        assert run(spin + "\n" + child, timeout=120)[0] == "ok"  # 0.3 CPU-s in the kernel, 0.3 in a child
        after = session.group.cpu_sample()
        assert before is not None and after is not None
        assert after.used_s - before.used_s >= 0.6, (before.used_s, after.used_s)  # the exited child counts
        assert session.pid in after.waits and after.at_s > before.at_s
    finally:
        run.close()
        session.close()
    assert session.group.cpu_sample() is None  # the group is gone with its run


@needs_bwrap
@needs_cgroups
def test_pids_flood_stops_at_max_processes_for_the_run(sandbox):
    limits = Limits(memory_mb=1024, max_processes=24, cpu_time_s=30)
    session = sandbox.start(KernelRequest(limits=limits))
    run = Runner(session)
    try:
        status, out = run("import os, time\nmade = 0\n"
                          "for _ in range(200):\n"
                          "    try:\n"
                          "        if os.fork() == 0:\n"
                          "            time.sleep(30); os._exit(0)\n"
                          "        made += 1\n"
                          "    except OSError as exc:\n"
                          "        print('refused', exc.errno); break\n"
                          "print('made', made)", timeout=30)
        assert status == "ok", out
        made = int(out.split("made")[-1])
        assert "refused 11" in out and 0 < made < limits.max_processes  # EAGAIN, well before 200
        counters = session.group.counters()
        assert counters.pids_denied >= 1 and counters.pids_peak == limits.max_processes, counters
    finally:
        run.close()
        hits = session.close()
    assert "process limit" in hits


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_tmpfs_and_shm_pages_count_against_the_runs_memory(sandbox):
    # scratch_mb lets /dev/shm hold 1 GB (in files under max_file_mb); memory_mb does not. Killing the
    # writer frees none of those pages, so the group's OOM killer may take the kernel too: a kernel death
    limits = Limits(memory_mb=768, scratch_mb=1024, cpu_time_s=30)
    session = sandbox.start(KernelRequest(limits=limits))
    run = Runner(session)
    try:
        run.kc.execute("import subprocess\n"
                       "fill = 'for i in 1 2 3 4 5; do head -c 200M /dev/zero > /dev/shm/f$i || exit 1; done'\n"
                       "subprocess.run(['sh', '-c', fill])")
        assert wait_gone(lambda: session.group.counters().oom_kills > 0, 30), session.group.counters()
        assert session.group.counters().memory_peak_bytes <= 768 * MiB
    finally:
        run.close()
        hits = session.close()
    assert "memory limit" in hits


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_a_prewarmed_kernel_is_already_in_its_runs_group_when_handed_out(sandbox):
    from grading.sandbox.pool import PrewarmedSandbox

    pool = PrewarmedSandbox(sandbox, sizes={"light": 1})
    request = KernelRequest(limits=Limits(memory_mb=2048, max_processes=48))
    try:
        pool.prepare(request)
        assert pool.wait_ready(request, timeout_s=120)
        session = pool.start(request)
        try:
            assert group_of(session.pid)["memory"].endswith(f"/{session.group.name}")
            pids = next(d for d in sandbox.groups.layout.dirs(session.group.name) if (d / "pids.max").exists())
            assert (pids / "pids.max").read_text().strip() == "48"  # the limits of the request it serves
            assert session.group.hits() == set() and session.poll_limits() == set()
        finally:
            session.close()
    finally:
        pool.close()


@pytest.fixture(scope="module")
def catalogue(tmp_path_factory) -> Catalogue:
    """sbx_attack with 30 s per cell: a cell squeezed against its memory limit runs slowly on a busy host."""
    root = tmp_path_factory.mktemp("catalogue")
    shutil.copytree(CATALOGUE, root, dirs_exist_ok=True)
    manifest = root / "exercises" / "ch05" / "sbx_attack" / "exercise.toml"
    manifest.write_text(manifest.read_text().replace("cell_timeout_s = 6", "cell_timeout_s = 30"))
    return Catalogue(root / "exercises", root / "reference")


def learner_notebook(*cells: str) -> str:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["titangrade"] = {"exercise_id": "ch05.sbx_attack"}
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nbformat.writes(nb)


class MemAvailable(threading.Thread):
    """Samples the host's MemAvailable every 20 ms until stopped; `lowest` in bytes."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.lowest = self.read()
        self.halt = threading.Event()

    @staticmethod
    def read() -> int:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no MemAvailable in /proc/meminfo")

    def run(self) -> None:
        while not self.halt.wait(0.02):
            self.lowest = min(self.lowest, self.read())


# sbx_attack's limits: memory_mb = 1024, so each child (300 MB) is far under RLIMIT_AS and 4 of them are not
CHILDREN = ("import subprocess, sys\n"
            "code = 'import time; b = b\"x\" * (300 * 2**20); time.sleep(1)'\n"
            "kids = [subprocess.Popen([sys.executable, '-c', code]) for _ in range(4)]\n"
            "codes = [k.wait() for k in kids]\n"
            "print(codes)\n"
            "assert codes == [0, 0, 0, 0], codes")
SAFETY_MARGIN = 1 << 30


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_forked_children_over_memory_mb_end_with_the_memory_limit_for_that_cell(sandbox, catalogue):
    recording = Recording(sandbox)
    sampler = MemAvailable()
    sampler.start()
    try:
        result = grade_notebook(learner_notebook("x = 6 * 7", CHILDREN), catalogue=catalogue, sandbox=recording)
    finally:
        sampler.halt.set()
        sampler.join()
    assert "memory limit" in result.limits_hit, (result.limits_hit, result.cells)
    cell = result.cells[1]
    assert cell.status == "error" and "1024 MB memory limit" in cell.message, cell
    assert result.cells[0].status == "ok" and next(c.score for c in result.checks if c.name == "product") == 1
    final = recording.sessions[0].group.final
    assert final.oom_kills >= 1 and final.memory_peak_bytes <= 1024 * MiB, final
    assert sampler.lowest > SAFETY_MARGIN, f"host MemAvailable fell to {sampler.lowest >> 20} MB"


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_a_kernel_killed_for_memory_is_a_kernel_death_with_the_memory_limit(sandbox, catalogue):
    # the kernel holds 150 MB more (its threads' arenas already take ~740 MB of RLIMIT_AS's 1024) and eight
    # children ask for 120 MB each: the group's OOM killer takes the biggest process, the kernel (~200 MB);
    # the other cells are re-run without this one
    hog = ("import subprocess, sys\nheld = b'x' * (150 * 2**20)\n"
           "code = 'import time; b = b\"y\" * (120 * 2**20); time.sleep(2)'\n"
           "kids = [subprocess.Popen([sys.executable, '-c', code]) for _ in range(8)]\n"
           "print([k.wait() for k in kids])")
    result = grade_notebook(learner_notebook("x = 6 * 7", hog, "token = 'not it'"), catalogue=catalogue,
                            sandbox=sandbox)
    assert result.status == Status.ERROR and "memory limit" in result.limits_hit, (result.limits_hit, result.cells)
    assert result.cells[1].status == "killed" and "memory limit" in result.cells[1].message, result.cells[1]
    assert result.cells[2].status == "ok"  # re-run in a fresh kernel, as after any kernel death
    assert next(c.score for c in result.checks if c.name == "product") == 1


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_a_killed_workers_groups_are_swept_at_start_up(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent("""\
        import sys, time
        from grading.exercise import Limits
        from grading.sandbox import KernelRequest
        from grading.sandbox.bwrap import BwrapConfig, BwrapSandbox
        session = BwrapSandbox(BwrapConfig(cgroups="require")).start(KernelRequest(limits=Limits(memory_mb=768)))
        print(session.user.pw_name, flush=True)
        time.sleep(300)
    """))
    worker = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              cwd=Path(__file__).resolve().parents[3])
    try:
        user = worker.stdout.readline().strip()
        assert user.startswith("tgsbx"), user
    finally:
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    groups = cgroups.run_groups("require")
    assert user in groups.leftovers()  # SIGKILL left the group behind
    sandbox = BwrapSandbox(BwrapConfig(cgroups="require"))  # start-up sweeps it
    # another test run on this machine may take that user for a moment; then the next sweep gets it
    assert wait_gone(lambda: sandbox.groups.sweep(sandbox.uids) or user not in groups.leftovers(), 30)


# ---- CPU: one run cannot starve the others --------------------------------------------------------

SPINNERS = ("import multiprocessing as mp, os, time\n"
            "def spin(until):\n"
            "    os.setsid()  # a session each: the kernel's autogroups would give each its own share\n"
            "    while time.time() < until: pass\n"
            "until = time.time() + {seconds}\n"
            "procs = [mp.Process(target=spin, args=(until,)) for _ in range({count})]\n"
            "[p.start() for p in procs]; [p.join() for p in procs]\n"
            "t = os.times()\n"
            "print('cpu', t.children_user + t.children_system)")


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_two_cpu_hogs_keep_a_light_grading_within_3x_of_idle(sandbox):
    """Idle and loaded are measured in the same test, interleaved, so the shared machine's own load is in
    both; each hog runs 4 busy processes in sessions of their own, which without groups (the kernel's
    autogroups then share the CPU per session) would take 8/9 of it from the light run."""
    catalogue = Catalogue(CATALOGUE / "exercises", CATALOGUE / "reference")
    light = learner_notebook("x = 6 * 7")

    def grade_light() -> float:
        t0 = time.perf_counter()
        result = grade_notebook(light, catalogue=catalogue, sandbox=sandbox)
        assert result.cells[0].status == "ok", result.cells
        return time.perf_counter() - t0

    grade_light()  # warm the page cache
    idle, loaded = [], []
    for _ in range(2):
        idle.append(grade_light())
        hogs = [sandbox.start(KernelRequest(limits=Limits(max_processes=64, cpu_time_s=120))) for _ in range(2)]
        runners = [Runner(h) for h in hogs]
        try:
            for r in runners:
                r.kc.execute(SPINNERS.format(seconds=12, count=4))
            time.sleep(1.0)  # the hogs are spinning
            loaded.append(grade_light())
            loaded.append(grade_light())
        finally:
            for r in runners:
                r.close()
            for h in hogs:
                h.close()
        idle.append(grade_light())
    ratio = statistics.median(loaded) / statistics.median(idle)
    print(f"light grading: idle {statistics.median(idle):.2f} s, with two 4-process CPU hogs "
          f"{statistics.median(loaded):.2f} s, ratio {ratio:.2f}")
    # Measured side by side (2 cores): with groups 1.43 and 2.12, without (cgroups="off") 5.17 and 5.51. A
    # light grading is now almost all CPU (no fixed waits at start or close), so with its fair third of two
    # cores the ratio sits near 1.5-2.1; the bound sits between that and what the hogs take without groups.
    assert ratio < 3.0, (idle, loaded)


def cpu_seconds_of_concurrent_runs(sandbox, counts: tuple[int, ...], seconds: float) -> list[float]:
    """Start one run per entry of `counts`, each spinning that many processes for `seconds` at the same
    time; return each run's CPU seconds."""
    sessions = [sandbox.start(KernelRequest(limits=Limits(max_processes=64, cpu_time_s=120))) for _ in counts]
    runners = [Runner(s) for s in sessions]
    outs: list[str] = ["" for _ in counts]
    try:
        threads = [threading.Thread(target=lambda k=k, r=r, c=c: outs.__setitem__(
            k, r(SPINNERS.format(seconds=seconds, count=c), timeout=seconds + 60)[1]))
            for k, (r, c) in enumerate(zip(runners, counts, strict=False))]
        [t.start() for t in threads]
        [t.join() for t in threads]
    finally:
        [r.close() for r in runners]
        [s.close() for s in sessions]
    return [float(out.split("cpu")[-1]) for out in outs]


@needs_bwrap
@needs_cgroups
@pytest.mark.slow
def test_a_run_with_six_busy_processes_gets_no_more_cpu_than_a_run_with_one(sandbox):
    """Fairness between runs, independent of the machine's other load: each run's group weighs the same,
    so six spinners share what one spinner gets (without groups they took about 6x as much)."""
    one, six = cpu_seconds_of_concurrent_runs(sandbox, (1, 6), seconds=6)
    print(f"CPU seconds over 6 s: run with 1 spinner {one:.2f}, run with 6 spinners {six:.2f}")
    assert six > 0 and one / six > 0.5, (one, six)

