# Generated from protos/k0maru/v1 by scripts/gen_protos.py; do not edit. Regenerate with:
#   .venv/bin/python scripts/gen_protos.py
