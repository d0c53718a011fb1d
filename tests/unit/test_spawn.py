from collscope.runtime.spawn import combined_exit_code


def test_combined_exit_code_priorities():
    assert combined_exit_code([0, 0, 0]) == 0
    assert combined_exit_code([0, 3, 0]) == 3
    assert combined_exit_code([2, 2]) == 2
    assert combined_exit_code([1, -9, 1]) == 1
    assert combined_exit_code([-9, -9]) == 1
    assert combined_exit_code([0, 130]) == 130
