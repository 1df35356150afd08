// The engine's results as Python classes, from the fields each result names once
// (model/ops/describe.h): one read-only attribute per `--json` key, with the same name, and
// `_fields`, those names in order (as dataclasses.fields gives a dataclass's).
#pragma once

#include "bindings.h"

#include "ops/describe.h"

#include <nanobind/stl/string.h>

#include <functional>
#include <string>

namespace ckpt::python {

// A field's value as Python sees it: numbers, strings, lists, None for what is unknown or
// absent, and described values as instances of their own bound classes.
template <class T> nb::object toPython(const T& v)
{
    if constexpr (ops::Described<T>) {
        return nb::cast(v, nb::rv_policy::copy);
    } else if constexpr (std::is_same_v<T, ops::Real>) {
        return nb::float_(v.value);
    } else if constexpr (ops::IsNullable<T>::value) {
        return v.value ? toPython(*v.value) : nb::none();
    } else if constexpr (ops::IsOptional<T>::value) {
        return v ? toPython(*v) : nb::none();
    } else if constexpr (ops::IsKeyed<T>::value) {
        nb::dict byKey;
        for (const auto& [key, x] : v.items)
            byKey[key.c_str()] = toPython(x);
        return byKey;
    } else if constexpr (ops::IsVector<T>::value) {
        nb::list items;
        for (const auto& x : v)
            items.append(toPython(x));
        return items;
    } else {
        return nb::cast(v);
    }
}

// "Name(key=value, ...)", as a dataclass prints itself.
std::string describedRepr(nb::handle self);

// Binds T under `name`: each described field a read-only property (None where the field's
// predicate says the result has none), `_fields`, and a dataclass-like repr.
template <ops::Described T> nb::class_<T> bindDescribed(nb::handle scope, const char* name)
{
    nb::class_<T> c(scope, name);
    nb::list names;
    auto field = [&](const char* key, auto get, auto... present) {
        c.def_prop_ro(key, [get, present...](const T& self) -> nb::object {
            if (!(present(self) && ...)) return nb::none();
            return toPython(std::invoke(get, self));
        });
        names.append(key);
    };
    T::describe(field);
    c.attr("_fields") = nb::tuple(names);
    c.def("__repr__", &describedRepr);
    return c;
}

void bindResults(nb::module_& m);

} // namespace ckpt::python
