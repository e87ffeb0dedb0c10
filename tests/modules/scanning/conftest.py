"""The scan tests' organization, with its module ``acme/vpc/aws``."""

from __future__ import annotations

import pytest

from tests.conftest import Api, make_org
from tests.modules.helpers import create_module


@pytest.fixture
def acme(api: Api) -> Api:
    make_org(api, "acme")
    create_module(api)
    return api
