import pytest

from dbarena import plan
from dbarena.errors import UsageError


@pytest.mark.parametrize(
    "hardware_threads, levels",
    [
        (1, [1, 2]),
        (2, [1, 2]),
        (4, [1, 2, 3]),  # 20 % of 4 = 0.8 -> 0, dropped; 40 % -> 1, 60 % -> 2, 80 %/99 % -> 3
        (16, [1, 2, 3, 6, 9, 12, 15]),
        (48, [1, 2, 9, 19, 28, 38, 47]),
        (128, [1, 2, 25, 51, 76, 102, 126]),  # study A's Ampere Altra Max
    ],
)
def test_default_levels(hardware_threads, levels):
    assert plan.default_levels(hardware_threads) == levels


@pytest.mark.parametrize("text, levels", [("1,4,16", [1, 4, 16]), ("16, 4,4,1", [1, 4, 16]), ("3", [3])])
def test_parse_levels(text, levels):
    assert plan.parse_levels(text) == levels


@pytest.mark.parametrize("text", ["0", "-3", "abc", "1,,2", "1.5", ""])
def test_parse_levels_rejects(text):
    with pytest.raises(UsageError):
        plan.parse_levels(text)


def test_build_multiplies_clients_and_orders_by_workload():
    points = plan.build(engine="postgres", workloads=["a", "b"], levels=[4, 1], clients_per_thread=2,
                        duration_s=5, scale=3)
    assert [(p.workload, p.threads, p.clients) for p in points] == [
        ("a", 1, 2), ("a", 4, 8), ("b", 1, 2), ("b", 4, 8),
    ]
    assert {(p.duration_s, p.scale, p.engine) for p in points} == {(5, 3, "postgres")}
