// SPDX-License-Identifier: Apache-2.0
// The translation unit that builds the torch-free precompiled header (cmake/Precompiled.cmake).
