#ifndef CPPBENCH_HPP
#define CPPBENCH_HPP

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

double cpp_sleep(double s) {
    std::this_thread::sleep_for(std::chrono::duration<double>(s));
    return s;
}

int sum_ints(const std::vector<int>& xs) {
    int total = 0;
    for (int x : xs) {
        total += x;
    }
    return total;
}

std::string echo_text(const std::string& t) {
    return t;
}

std::vector<int> big_list(int n) {
    std::vector<int> out;
    out.reserve(n > 0 ? n : 0);
    for (int i = 0; i < n; i++) {
        out.push_back(i);
    }
    return out;
}

int fail_with(const std::string& m) {
    throw std::runtime_error(m);
}

#endif
