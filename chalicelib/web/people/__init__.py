"""The pages people manage themselves and each other with: the account page (``account``:
profile, password, API tokens; its own blueprint, served with the everyday pages by the
``web`` function) and an organization's members and teams (``members``, ``teams``: they
register on ``common.bp``, served by the ``webadmin`` function). Importing the package loads
none of them, so that each function loads only its own pages."""
