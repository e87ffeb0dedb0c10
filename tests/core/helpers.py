"""What the list tests, and the web's, build on: an organization seeded with modules, and the
lean entry a later page reads."""

from __future__ import annotations

LEAN = 128  # bytes per lean entry the lists may read for each item before a page


VERSIONS = 30


def seed(org: str, count: int, *, kept: bool = True, versions: int = VERSIONS) -> None:
    """``count`` private modules of ``versions`` ok versions each (30: about 2.6 KB an item),
    written straight to the table; ``kept``: with their protocol list entries, count and key sets as
    the writes keep them, else as a stack deployed before the lists has them (the backfill
    makes those)."""
    from chalicelib.core.data import lists
    from chalicelib.core.data.ids import iso, new_id, now
    from chalicelib.modules import store
    from chalicelib.modules.store import ModuleModel, ProtocolEntryModel, module_key

    moment = now()
    statuses = {
        f"1.{v}.0": {
            "status": "ok",
            "published-at": iso(moment),
            "archive": f"v1/object/{new_id('modver')}.tar.gz",
        }
        for v in range(versions)
    }
    with ModuleModel.batch_write() as batch, ProtocolEntryModel.batch_write() as entries:
        for index in range(count):
            name, provider = f"mod{index:05d}", ("aws", "google")[index % 2]
            module = ModuleModel(
                org,
                module_key("private", org, name, provider),
                id=new_id("mod"),
                registry_name="private",
                namespace=org,
                name=name,
                provider=provider,
                status="setup_complete",
                version_statuses=statuses,
                created_at=moment,
                updated_at=moment,
            )
            if kept:  # what the web UI's list shows of the latest version
                module.latest_summary = {"version": module.latest_servable(), "description": ""}
            batch.save(module)
            if kept:
                entries.save(store.protocol_item(module, store.protocol_entry(module)))
    if kept:
        providers = {"provider:aws": (count + 1) // 2, "provider:google": count // 2}
        lists.set_counts(store.count_scope(org), {"private": count, **providers})
        keys = [
            module_key("private", org, f"mod{i:05d}", ("aws", "google")[i % 2])
            for i in range(count)
        ]
        lists.set_key_sets(store.count_scope(org), keys)
