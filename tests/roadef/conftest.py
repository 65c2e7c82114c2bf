import pytest

from .helpers import tiny_instance


@pytest.fixture
def tiny():
    return tiny_instance()
