"""Request bodies of the trust routes: the organization's publishing policy
(``chalicelib.core.api.http.typed_body``). The types and bounds are checked here, before
anything is read; what a value may be (a severity, a rule id) is ``trust.policy``'s."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from chalicelib.core.api.attributes import Attributes, Identifier
from chalicelib.trust.policy import MAX_IGNORED_RULES, MAX_RULE_ID

RuleId = Annotated[Identifier, Field(max_length=MAX_RULE_ID)]


class UpdatePolicy(Attributes):
    """Every attribute optional: one left out (or ``null``) keeps its stored value;
    ``ignored-rules: []`` clears the list."""

    block_severity: Identifier | None = None
    ignored_rules: Annotated[list[RuleId], Field(max_length=MAX_IGNORED_RULES)] | None = None
    require_readme: bool | None = None
