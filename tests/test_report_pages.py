"""Nothing printed twice (issue #32): the pieces of the printed report that used to repeat
themselves, checked on their own (fast; the whole PDF is tests/test_layout.py's)."""

from __future__ import annotations

from roofreport.report.naming import kernel_labels
from roofreport.report.sections.inputs import _own_file_left_out

ADD = ("void kernelPointwiseApply2<TensorAddOp<float>, float, float, unsigned int, int=1, int=1>"
       "(OffsetInfo<TensorAddOp<float>, float, unsigned int>, OffsetInfo<float, float, int=1>, float, float)")
CADD = ADD.replace("TensorAddOp", "TensorCAddOp")


def test_a_printed_kernel_label_drops_the_return_type_and_parameter_list_keeping_template_arguments():
    labels = kernel_labels([ADD, CADD, "sgemm_largek_lds64", "[CUDA memcpy HtoD]", None])
    assert labels[ADD] == "kernelPointwiseApply2<TensorAddOp<float>, float, float, unsigned int, int=1, int=1>"
    assert labels[CADD] == labels[ADD].replace("TensorAddOp", "TensorCAddOp")
    assert labels["sgemm_largek_lds64"] == "sgemm_largek_lds64"
    assert labels["[CUDA memcpy HtoD]"] == "[CUDA memcpy HtoD]"
    assert labels[None] is None


def test_a_parameter_list_stays_where_two_kernels_of_the_table_differ_in_it_alone():
    first, second = "void scale<float>(float*, int)", "void scale<float>(float*, long)"
    other = "void cudnn::detail::wgrad_alg0_engine<float, int=128>(int, (anonymous namespace)::Params)"
    labels = kernel_labels([first, second, other])
    assert labels == {first: "scale<float>(float*, int)", second: "scale<float>(float*, long)",
                      other: "cudnn::detail::wgrad_alg0_engine<float, int=128>"}
    # a name whose last bracket group is inside its template arguments keeps it
    assert kernel_labels(["k<(anonymous namespace)::T>"]) == {"k<(anonymous namespace)::T>": "k<(anonymous namespace)::T>"}


def test_a_failed_files_message_leaves_out_the_file_its_row_names_and_keeps_its_place():
    path = "imagenet/final/out.resnet18_16_0.01_k80_conv.775372"
    assert _own_file_left_out(f"{path}:9: nvprof reported: Error", path) == "line 9: nvprof reported: Error"
    assert _own_file_left_out(f"{path}:9:4: bad cell", path) == "line 9, column 4: bad cell"
    assert _own_file_left_out(f"{path}: the log ends early", path) == "the log ends early"
    # another file's name, or none, is left as it is
    assert _own_file_left_out("other/file:3: x", path) == "other/file:3: x"
    assert _own_file_left_out("no table", path) == "no table"
