"""The test suite's one option: `--slow` also runs the tests marked `slow` (the long ROADEF searches, the big
property runs, the bulk differential run against kube-scheduler). The README's test command and .ci/run pass it;
without it the run is the fast one, for working on the code."""

import pytest


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", help="also run the tests marked slow (as .ci/run does)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a long test; runs with --slow (the README's test command, .ci/run)")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --slow (the README's test command does)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
