-- CreateTable
CREATE TABLE "ContainerDeployment" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "description" TEXT NOT NULL,
    "image" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "epoch" INTEGER NOT NULL DEFAULT 0,
    "revision" INTEGER NOT NULL,
    "spec" TEXT NOT NULL,
    "minReplicas" INTEGER NOT NULL,
    "maxReplicas" INTEGER NOT NULL,
    "desiredReplicas" INTEGER NOT NULL,
    "readyReplicas" INTEGER NOT NULL DEFAULT 0,
    "readyRevision" INTEGER NOT NULL DEFAULT 0,
    "readySince" BIGINT,
    "changedAt" BIGINT NOT NULL,
    "createdAt" BIGINT NOT NULL,
    "updatedAt" BIGINT NOT NULL,

    CONSTRAINT "ContainerDeployment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ContainerDeploymentLog" (
    "id" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,
    "deploymentId" TEXT NOT NULL,
    "revision" INTEGER NOT NULL,
    "source" TEXT NOT NULL,
    "at" BIGINT NOT NULL,
    "text" TEXT NOT NULL,

    CONSTRAINT "ContainerDeploymentLog_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SecretUse" (
    "secretId" TEXT NOT NULL,
    "deploymentId" TEXT NOT NULL,
    "projectId" TEXT NOT NULL,

    CONSTRAINT "SecretUse_pkey" PRIMARY KEY ("secretId","deploymentId")
);

-- CreateIndex
CREATE INDEX "ContainerDeployment_projectId_createdAt_id_idx" ON "ContainerDeployment"("projectId", "createdAt", "id");

-- CreateIndex
CREATE UNIQUE INDEX "ContainerDeployment_projectId_name_key" ON "ContainerDeployment"("projectId", "name");

-- CreateIndex
CREATE INDEX "ContainerDeploymentLog_deploymentId_id_idx" ON "ContainerDeploymentLog"("deploymentId", "id");

-- CreateIndex
CREATE INDEX "SecretUse_deploymentId_idx" ON "SecretUse"("deploymentId");
