"""Engines and native snapshots: fidelity on generated and real games, many interleaved restores, resets
that keep stored states, half snapshots caught, independent handcoded experts, recycled engines, cost."""

import random
import subprocess
import sys
from pathlib import Path

import pytest
from tests.alfworld_helpers import GARBAGE, needs_real, random_walk, trace
from tests.alfworld_helpers import cache_dir_fixture, gen_fixture, real_fixture  # noqa: F401  (fixtures)

from envs import ReplaySnapshot, check_snapshot_fidelity
from envs.alfworld import AlfWorldEnv, Engine


@pytest.mark.parametrize("task_id", range(6))
def test_fidelity_on_generated_games(gen, task_id):
    rng = random.Random(task_id)
    for expert in ("planner", "handcoded"):
        gen.expert = expert
        gen.reset(options={"task_id": task_id})
        info = random_walk(gen, rng, rng.randint(0, 10))
        if not info["won"]:
            report = check_snapshot_fidelity(gen, info, num_restores=3, num_steps=15, seed=task_id)
            assert report.ok and report.steps_compared >= 1
    gen.expert = "planner"


@needs_real
def test_fidelity_on_real_games(real):
    real.expert = "handcoded"  # the planner's off-plan replanning takes seconds on the larger real kitchens
    try:
        for task_id in range(real.num_tasks):
            rng = random.Random(task_id)
            real.reset(options={"task_id": task_id})
            info = random_walk(real, rng, rng.randint(0, 10))
            if not info["won"]:
                assert check_snapshot_fidelity(real, info, num_restores=3, num_steps=15, seed=task_id).ok
    finally:
        real.expert = "planner"


def test_many_interleaved_restores_match_replays(gen):
    """30 envs restored from one handle run different walks round-robin (each installs its own state into
    the shared engine before every step); each matches a fresh replay of the same actions."""
    rng = random.Random(0)
    gen.reset(options={"task_id": 5})
    random_walk(gen, rng, 4)
    handle, replay = gen.snapshot(), ReplaySnapshot(gen)
    copies = [handle.restore() for _ in range(30)]
    walks, traces = [[] for _ in copies], [[] for _ in copies]
    for _ in range(8):
        for i, env in enumerate(copies):  # round-robin: every step switches the engine to another state
            if not env.state.won:
                admissible = env.state.native.tw_state["admissible_commands"]
                walks[i].append(rng.choice(admissible + GARBAGE[:2]))
                traces[i] += trace(env, walks[i][-1:])
    assert len({tuple(t) for t in traces}) > 20  # the copies really went different ways
    for i in range(0, 30, 6):
        assert trace(replay.restore(), walks[i]) == traces[i]
    # the handle is intact after all that, and so is the original env
    assert trace(handle.restore(), walks[1]) == traces[1]
    assert trace(gen, walks[2]) == traces[2]


def test_reset_never_frees_stored_states(gen):
    gen.reset(options={"task_id": 2})
    random_walk(gen, random.Random(1), 3)
    handle = gen.snapshot()
    actions = gen.expert_plan()
    expected = trace(handle.restore(), actions)
    first_obs = gen.reset(options={"task_id": 2})[0]
    for task_id in (3, 2):  # another game, then the same game again (installs its initial state)
        obs, info = gen.reset(options={"task_id": task_id})
    assert obs == first_obs and info["steps"] == 0
    assert trace(handle.restore(), actions) == expected


@pytest.mark.parametrize("broken", ["planner state only", "python facts only"])
def test_fidelity_checker_catches_a_half_snapshot(gen, monkeypatch, broken):
    """The state lives in the planner library and in textworld's Python facts: installing either one alone
    corrupts observations or admissible commands, and the checker says so."""
    original = Engine.install

    def half_install(self, native):
        if broken == "planner state only":
            self.lib.set_state_id(native.state_id)
        else:
            state_id = self.lib.get_state_id()
            original(self, native)
            self.lib.set_state_id(state_id)

    gen.reset(options={"task_id": 3})
    random_walk(gen, random.Random(2), 3)
    info = gen._info(invalid=False)
    actions = gen.expert_plan()[:4]
    monkeypatch.setattr(Engine, "install", half_install)
    report = check_snapshot_fidelity(gen, info, actions=actions, num_restores=3, raise_on_error=False)
    assert not report.ok


def test_snapshot_restore_handcoded_expert_independent(cache_dir):
    env = AlfWorldEnv(cache_dir=cache_dir, num_games=12, expert="handcoded")
    env.reset(options={"task_id": 5})
    for _ in range(4):
        env.step(env.expert_action())
    handle = env.snapshot()
    runs = []
    for candidate in (handle.restore(), env, handle.restore()):
        actions = []
        for _ in range(30):
            actions.append(candidate.expert_action())
            _, _, terminated, truncated, _ = candidate.step(actions[-1])
            if terminated or truncated:
                break
        runs.append((actions, candidate.state.won))
    assert runs[0] == runs[1] == runs[2] and runs[0][1]


def test_engines_are_recycled_and_the_process_exits_cleanly(gen, cache_dir):
    """Engines nobody holds give their fast-downward library copy to the next game (unloading one would
    crash the process at exit); a run over more games than the engine cache holds exits with status 0."""
    for task_id in range(4):
        gen.game_file(task_id)  # make sure the games exist
    script = f"""
import gc, envs.alfworld as alf, envs.alfworld.engine as engine
engine.ENGINE_CACHE_SIZE = 1
env = alf.AlfWorldEnv(cache_dir={cache_dir!r}, num_games=12, expert="handcoded")
loaded = []
for task_id in [0, 1, 2, 3, 0]:
    alf.run_expert(env, task_id)
    loaded.append(id(env.state.engine.lib))
    gc.collect()
print(len(set(loaded)), len(alf._FREE_LIBS))
"""
    result = subprocess.run([sys.executable, "-c", script], cwd=Path(__file__).resolve().parents[1],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    distinct_libs, free_libs = map(int, result.stdout.split())
    assert distinct_libs <= 2 and free_libs <= 1  # 5 games played on at most 2 library copies


def test_snapshot_is_cheap(gen):
    import time
    gen.reset(options={"task_id": 0})
    gen.step("look")
    start = time.perf_counter()
    for _ in range(200):
        handle = gen.snapshot()
        handle.restore()
    assert (time.perf_counter() - start) / 200 < 1e-3  # measured ~5 us; bench/alfworld_step.py reports it
