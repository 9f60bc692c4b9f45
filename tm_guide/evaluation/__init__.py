"""Evaluation of guided vs unguided translation: the analyses of the paper's section 4."""
