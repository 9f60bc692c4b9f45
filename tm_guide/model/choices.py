"""What a conversion may be asked for, apart from the converters themselves: the CLI offers these
choices without importing CTranslate2's converters (which import transformers and torch)."""

QUANTIZATIONS = ("int8", "int8_float32", "float16", "float32")
SOURCE_FORMATS = ("transformers", "opennmt-py", "fairseq")  # the keys of convert.SOURCES
