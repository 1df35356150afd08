// The `--json` document of any described result (ops/describe.h): an object with the described
// keys in their order, each value written as its type says.
#pragma once

#include "ops/describe.h"

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <type_traits>

namespace ckpt::ops {

template <Described T> nlohmann::ordered_json describedJson(const T& r);

template <class T> nlohmann::ordered_json jsonValue(const T& v)
{
    using nlohmann::ordered_json;
    if constexpr (Described<T>) {
        return describedJson(v);
    } else if constexpr (std::is_same_v<T, Real>) {
        if (std::isfinite(v.value)) return v.value;
        return std::isnan(v.value) ? "nan" : v.value > 0 ? "inf" : "-inf";
    } else if constexpr (IsNullable<T>::value) {
        return v.value ? jsonValue(*v.value) : ordered_json(nullptr);
    } else if constexpr (IsKeyed<T>::value) {
        ordered_json o = ordered_json::object();
        for (const auto& [key, x] : v.items)
            o[key] = jsonValue(x);
        return o;
    } else if constexpr (IsVector<T>::value) {
        ordered_json a = ordered_json::array();
        for (const auto& x : v)
            a.push_back(jsonValue(x));
        return a;
    } else {
        return ordered_json(v);
    }
}

template <Described T> nlohmann::ordered_json describedJson(const T& r)
{
    nlohmann::ordered_json doc = nlohmann::ordered_json::object();
    auto field = [&](const char* key, const auto& get, const auto&... present) {
        if (!(present(r) && ...)) return;
        const auto& value = std::invoke(get, r);
        using V = std::remove_cvref_t<decltype(value)>;
        if constexpr (IsOptional<V>::value) {
            if (value) doc[key] = jsonValue(*value);
        } else {
            doc[key] = jsonValue(value);
        }
    };
    T::describe(field);
    return doc;
}

} // namespace ckpt::ops
