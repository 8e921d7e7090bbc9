// meshes: several triangle meshes in one packed batch, the way kaolin and PyTorch3D batch them.
//
// Every mesh has its own vertices (V_i, 3) and faces (F_i, 3) of vertex indices that count from
// 0 within the mesh. Packing the vertices concatenates them, so mesh i's vertex v lands on row
// first_idx[i] + v of the packed vertices: the face indices must be shifted by first_idx[i]
// before they mean anything in the packed tensor. tile_to_packed repeats each mesh's offset once
// per face, so the shift is one add over all faces. The example then computes every face's area
// from the packed tensors and each mesh's surface area with one segment_reduce, and checks all
// of it against the meshes one by one. Returns 1 if any check fails.

#include <cmath>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include <Eigen/Geometry>  // cross products
#include <tbatch/tbatch.hpp>
#include <tbatch/tensor/eigen.hpp>  // Tensor::matrix() and flat(), Eigen maps

using tbatch::index_t;
using tbatch::PackedBatch;
using tbatch::Shape;
using tbatch::Tensor;

namespace {

struct Mesh {
  std::string name;
  Tensor<float> vertices;  // (V, 3)
  Tensor<index_t> faces;   // (F, 3), indices into this mesh's vertices
};

// A flat n x m grid of quads in the z = 0 plane, two triangles per quad.
Mesh grid(index_t n, index_t m, float spacing) {
  Tensor<float> v(Shape{(n + 1) * (m + 1), 3});
  for (index_t i = 0; i <= n; ++i)
    for (index_t j = 0; j <= m; ++j) {
      v(i * (m + 1) + j, 0) = spacing * float(j);
      v(i * (m + 1) + j, 1) = spacing * float(i);
    }
  Tensor<index_t> f(Shape{2 * n * m, 3});
  index_t k = 0;
  for (index_t i = 0; i < n; ++i)
    for (index_t j = 0; j < m; ++j, k += 2) {
      const index_t a = i * (m + 1) + j, b = a + 1, c = a + m + 1, d = c + 1;
      f(k, 0) = a, f(k, 1) = b, f(k, 2) = d;
      f(k + 1, 0) = a, f(k + 1, 1) = d, f(k + 1, 2) = c;
    }
  return {"grid " + std::to_string(n) + "x" + std::to_string(m), v, f};
}

Mesh tetrahedron() {
  return {"tetrahedron", Tensor<float>({4, 3}, {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1}),
          Tensor<index_t>({4, 3}, {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3})};
}

Mesh cube(float side) {
  std::vector<float> v;
  for (int i = 0; i < 8; ++i)
    for (int d = 0; d < 3; ++d)
      v.push_back((i >> d) & 1 ? side : 0.0f);
  // Two triangles per face of the cube (vertex i has x = bit 0, y = bit 1, z = bit 2).
  return {"cube", Tensor<float>({8, 3}, v),
          Tensor<index_t>({12, 3}, {0, 2, 1, 1, 2, 3, 4, 5, 6, 5, 7, 6, 0, 1, 4, 1, 5, 4,
                                    2, 6, 3, 3, 6, 7, 0, 4, 2, 2, 4, 6, 1, 3, 5, 3, 7, 5})};
}

// Area of the triangle (a, b, c) given as rows of a (n, 3) tensor.
float triangle_area(const Tensor<float>& vertices, index_t a, index_t b, index_t c) {
  const auto m = vertices.matrix();
  const Eigen::Vector3f ab = (m.row(b) - m.row(a)).transpose();
  const Eigen::Vector3f ac = (m.row(c) - m.row(a)).transpose();
  return 0.5f * ab.cross(ac).norm();
}

}  // namespace

int main() {
  const std::vector<Mesh> meshes = {tetrahedron(), cube(2.0f), grid(3, 4, 0.5f), grid(1, 1, 3.0f)};
  std::vector<Tensor<float>> vertex_list;
  std::vector<Tensor<index_t>> face_list;
  for (const Mesh& m : meshes) {
    vertex_list.push_back(m.vertices);
    face_list.push_back(m.faces);
  }

  // Pack vertices and faces separately: each has its own first_idx.
  const PackedBatch<float> vertices = tbatch::list_to_packed(vertex_list);
  const PackedBatch<index_t> faces = tbatch::list_to_packed(face_list);
  const index_t meshes_n = vertices.batch_size();

  // Shift mesh i's face indices by the row its vertices start at: vertex first_idx[i], repeated
  // once per face of mesh i by tile_to_packed (shape (total faces, 1)), added to every column.
  Tensor<index_t> faces_per_mesh(Shape{meshes_n});
  for (index_t i = 0; i < meshes_n; ++i)
    faces_per_mesh(i) = faces.rows_of(i);
  const Tensor<index_t> vertex_offset =
      tbatch::tile_to_packed(vertices.first_idx().narrow(0, 0, meshes_n), faces_per_mesh);
  Tensor<index_t> packed_faces = faces.data().clone();
  packed_faces.matrix().colwise() += vertex_offset.matrix().col(0);

  std::printf("%lld meshes: packed vertices %lldx3, packed faces %lldx3\n",
              static_cast<long long>(meshes_n), static_cast<long long>(vertices.data().size(0)),
              static_cast<long long>(packed_faces.size(0)));
  std::cout << "  vertex first_idx " << vertices.first_idx() << "\n"
            << "  face first_idx   " << faces.first_idx() << std::endl;

  bool ok = true;
  // Every shifted index points at the same vertex the mesh's own face does, and stays inside
  // the mesh's rows of the packed vertices.
  for (index_t i = 0; i < meshes_n; ++i) {
    const Mesh& mesh = meshes[static_cast<std::size_t>(i)];
    const index_t v0 = vertices.first_idx()(i), v1 = vertices.first_idx()(i + 1);
    const index_t f0 = faces.first_idx()(i);
    for (index_t f = 0; f < mesh.faces.size(0); ++f)
      for (index_t k = 0; k < 3; ++k) {
        const index_t global = packed_faces(f0 + f, k);
        const index_t local = mesh.faces(f, k);
        ok = ok && global >= v0 && global < v1 && global == v0 + local;
        for (index_t d = 0; d < 3; ++d)
          ok = ok && vertices.data()(global, d) == mesh.vertices(local, d);
      }
  }

  // Area of every face straight from the packed tensors, then each mesh's surface area as the
  // sum over its faces: one segment_reduce with the faces' first_idx.
  Tensor<float> face_area(Shape{packed_faces.size(0), 1});
  for (index_t f = 0; f < packed_faces.size(0); ++f)
    face_area(f, 0) =
        triangle_area(vertices.data(), packed_faces(f, 0), packed_faces(f, 1), packed_faces(f, 2));
  const Tensor<float> surface =
      tbatch::segment_reduce(face_area, faces.first_idx(), tbatch::Reduce::sum);

  std::printf("\nmesh          vertices  faces  surface area  expected\n");
  for (index_t i = 0; i < meshes_n; ++i) {
    const Mesh& mesh = meshes[static_cast<std::size_t>(i)];
    // The same area from the mesh alone, with its own local indices.
    float expected = 0.0f;
    for (index_t f = 0; f < mesh.faces.size(0); ++f)
      expected +=
          triangle_area(mesh.vertices, mesh.faces(f, 0), mesh.faces(f, 1), mesh.faces(f, 2));
    ok = ok && std::abs(surface(i, 0) - expected) <= 1e-4f * (1.0f + expected);
    std::printf("%-12s  %8lld  %5lld  %12.4f  %8.4f\n", mesh.name.c_str(),
                static_cast<long long>(vertices.rows_of(i)),
                static_cast<long long>(faces.rows_of(i)), surface(i, 0), expected);
  }
  // Closed-form areas: the cube of side 2 has 6 * 4 = 24, a 3x4 grid of 0.5 squares 3, a
  // single 3x3 quad 9, the unit corner tetrahedron 3/2 + sqrt(3)/2.
  const float known[] = {1.5f + std::sqrt(3.0f) / 2.0f, 24.0f, 3.0f, 9.0f};
  for (index_t i = 0; i < meshes_n; ++i)
    ok = ok && std::abs(surface(i, 0) - known[i]) <= 1e-4f * (1.0f + known[i]);

  // The packed faces back as per-mesh views: they are the local faces plus the offset.
  const std::vector<Tensor<index_t>> shifted =
      tbatch::packed_to_list(packed_faces, faces.shape_per_tensor(), faces.first_idx());
  for (index_t i = 0; i < meshes_n; ++i) {
    Tensor<index_t> local = shifted[static_cast<std::size_t>(i)].clone();
    local.flat() -= vertices.first_idx()(i);
    ok = ok && tbatch::equal(local, meshes[static_cast<std::size_t>(i)].faces);
  }

  std::printf("%s\n", ok ? "all checks passed" : "CHECK FAILED");
  return ok ? 0 : 1;
}
