"""`zoo.recipes.trained`: the trained model imports no training code."""

import subprocess
import sys


def test_the_trained_model_imports_no_training_code_or_keras():
    code = (
        "import sys, zoo.recipes.trained; print(sorted(m for m in sys.modules if m in "
        "{'keras', 'tensorflow', 'zoo.recipes.families', 'zoo.recipes.translator', "
        "'zoo.recipes.classifier', 'zoo.recipes.language_model', "
        "'zoo.recipes.workflow'}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
