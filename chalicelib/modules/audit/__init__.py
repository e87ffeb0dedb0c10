"""The registry's modules in the audit trail: what each change records (``events``) and a
version's who-did-what read back from the trail (``history``)."""
