"""`keras-seq serve`: an exported SavedModel behind TF Serving's REST API."""

import os
import sys

from zoo.cli.errors import UsageError
from zoo.serving import flags as server_flags


def needs_tensorflow(args):
    """Whether `serve` with `args` loads TensorFlow:
    a CTranslate2 export is served without it."""
    return not args.ctranslate2


def add_parser(commands):
    """Adds `serve` and its flags to the `keras-seq` subparsers."""
    parser = commands.add_parser(
        "serve",
        help="serve an exported SavedModel with TF Serving's REST API and a page",
    )
    parser.add_argument(
        "--saved-model",
        default=None,
        help="the base of numbered versions (the highest is served) or a version",
    )
    server_flags.add_server_arguments(parser)
    parser.set_defaults(run=run)


def _base_and_version(path):
    """(base directory, version directory, version number) `path` means."""
    from zoo.recipes.saved_model import latest_version

    version_dir = latest_version(path)
    if version_dir != path:
        return path, version_dir, int(os.path.basename(version_dir))
    name = os.path.basename(os.path.normpath(path))
    if name.isdigit():
        return os.path.dirname(os.path.normpath(path)), path, int(name)
    return path, path, 1


def run(args):
    """Serves `--saved-model` until SIGTERM; 0 after the requests in flight."""
    if bool(args.saved_model) == bool(args.ctranslate2):
        raise UsageError("give exactly one of --saved-model and --ctranslate2.")
    if args.ctranslate2:
        from zoo.serving import ctranslate2_model

        return ctranslate2_model.serve_command(args)
    from zoo import serving

    base, version_dir, version = _base_and_version(args.saved_model)
    name = args.model_name or os.path.basename(os.path.abspath(base)) or "model"
    try:
        return serving.serve(
            version_dir,
            version,
            name,
            log=lambda line: print(line, flush=True),
            **server_flags.server_options(args),
        )
    except ValueError as error:
        raise UsageError(server_flags.usage_message(error)) from None
    except serving.LoadError as error:
        raise UsageError(f"--saved-model {args.saved_model}: {error}") from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise UsageError(
            f"{server_flags.address(args)}: cannot listen there ({reason})"
        ) from None
    finally:
        sys.stdout.flush()
