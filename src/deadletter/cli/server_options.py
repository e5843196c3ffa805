"""The click options of the server's settings, built from their declarations in `ServerConfig`
(config.py): the flag, the environment variable, the type and bounds, the default and the help
of each are read there, never written here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import Field
from pathlib import Path
from typing import Any, TypeVar, get_args, get_type_hints

import click

from deadletter.config import Option, ServerConfig, env_of, flag_of, options

F = TypeVar("F", bound=Callable[..., Any])

HINTS = get_type_hints(ServerConfig)


def _base(hint: Any) -> Any:
    """`int` of `int`, `Path` of `Path | None`, `tuple` of `tuple[str, ...]`."""
    origin = getattr(hint, "__origin__", None)
    if origin is tuple:
        return tuple
    kinds = [a for a in get_args(hint) if a is not type(None)] or [hint]
    return kinds[0]


def _checked(how: Option, convert: Callable[[Any], Any] | None) -> Callable[..., Any] | None:
    if how.check is None and convert is None:
        return None

    def callback(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if how.check is not None:
            refused = how.check(value)
            if refused is not None:
                raise click.BadParameter(refused)
        return value if convert is None else convert(value)

    return callback


def click_option(f: Field[Any], how: Option) -> Callable[[F], F]:
    """One setting's click option."""
    kind = _base(HINTS[f.name])
    decls = [flag_of(f.name)]
    kw: dict[str, Any] = {"help": how.help, "default": f.default}
    if how.env:
        kw |= {"envvar": env_of(f.name), "show_envvar": True}
    convert: Callable[[Any], Any] | None = None
    if how.words is not None:
        yes, no = how.words
        kw |= {"type": click.Choice(how.words), "default": yes if f.default else no}
        convert = yes.__eq__
    elif kind is bool and how.switch:
        decls = [f"{decls[0]}/--no-{decls[0][2:]}"]
    else:
        kw |= _typed(kind, how)
    if how.metavar:
        kw["metavar"] = how.metavar
    if how.shown_default is not None:
        kw["show_default"] = how.shown_default
    elif f.default is not None and kind is not tuple:
        kw["show_default"] = True
    callback = _checked(how, convert)
    if callback is not None:
        kw["callback"] = callback
    return click.option(*decls, **kw)


def _typed(kind: type, how: Option) -> dict[str, Any]:
    """The click keywords that give an option of `kind` its type (or make it a flag)."""
    if kind is bool:
        return {"is_flag": True}
    if how.choices:
        return {"type": click.Choice(how.choices, case_sensitive=False)}
    if kind is int:
        return {"type": click.IntRange(_int(how.low), _int(how.high))}
    if kind is float:
        return {"type": click.FloatRange(how.low, how.high)}
    if kind is Path:
        dirs = how.directory
        return {"type": click.Path(file_okay=not dirs, dir_okay=dirs, path_type=Path)}
    if kind is tuple:
        return {"multiple": True, "default": None}
    return {}


def _int(bound: float | None) -> int | None:
    return None if bound is None else int(bound)


def server_options(*names: str) -> Callable[[F], F]:
    """The options of the settings `names`, in the order declared; of every setting without."""

    def decorate(command: F) -> F:
        chosen = [(f, how) for f, how in options() if not names or f.name in names]
        for f, how in reversed(chosen):
            command = click_option(f, how)(command)
        return command

    return decorate
